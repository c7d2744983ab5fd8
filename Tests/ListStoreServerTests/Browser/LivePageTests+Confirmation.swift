import Foundation
import ListStoreClientTesting
import TestSupport
import Testing

/// Nothing is deleted without a question in a dialog of the page that names what goes.
extension LivePageTests {
  /// Records, in the page, every request it sends (`window.sent`, as "METHOD URL") and
  /// every dialog closed (`data-closed` on the body, counted by a listener that runs
  /// before the page's own, and an attribute so that `waitFor` sees it change): once it
  /// has grown, the page has sent whatever its answer sends.
  static let recorder = """
    window.sent = [];
    const fetched = window.fetch;
    window.fetch = (url, init) => {
      window.sent.push(((init && init.method) || "GET") + " " + url);
      return fetched(url, init);
    };
    document.body.dataset.closed = 0;
    document.addEventListener("close", () => { document.body.dataset.closed++; }, true);
    """

  static let question = "document.querySelector('dialog p').textContent"

  /// Presses Enter on the control `key` and waits for the dialog, modal, to ask.
  func ask(_ page: BrowserPage, _ key: String) throws -> String {
    try page.tab(to: key)
    try page.press("Enter")
    try page.waitFor("document.querySelector('dialog:modal') !== null")
    return try page.evaluate(Self.question) as? String ?? ""
  }

  /// Waits for the dialog's `count`-th closing, and returns the deletes sent so far.
  func deletesSent(_ page: BrowserPage, afterClosing count: Int) throws -> [String] {
    try page.waitFor(
      "document.body.dataset.closed === '\(count)' && !document.querySelector('dialog').open")
    let sent = try page.evaluate("JSON.stringify(window.sent)") as? String ?? "[]"
    let requests = try JSONSerialization.jsonObject(with: Data(sent.utf8)) as? [String] ?? []
    return requests.filter { $0.hasPrefix("DELETE ") }
  }

  @Test func everyDeleteAsksInADialogOfThePageNamingWhatGoes() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    try page.evaluate(Self.recorder)
    let apples = try page.evaluate("document.querySelector('li').dataset.id") as? String ?? ""
    let section = try page.evaluate("document.querySelector('section').dataset.id") as? String ?? ""

    // An item: the question names it; Cancel has the focus; Escape cancels.
    #expect(try ask(page, "delete-\(apples)") == "Delete \"apples\"? This cannot be undone.")
    #expect(try page.focusedKey() == "confirm-cancel")
    try page.press("Escape")
    #expect(try deletesSent(page, afterClosing: 1) == [])
    #expect(try storedValues("groceries", server) == "[\"apples\",\"pears\"]")
    // The focus is back on the button that asked.
    #expect(try page.focusedKey() == "delete-\(apples)")
    // Enter on Cancel (focused) cancels too.
    _ = try ask(page, "delete-\(apples)")
    try page.press("Enter")
    #expect(try deletesSent(page, afterClosing: 2) == [])
    #expect(try storedValues("groceries", server) == "[\"apples\",\"pears\"]")
    // Delete deletes.
    _ = try ask(page, "delete-\(apples)")
    try page.tab(to: "confirm-delete")
    try page.press("Enter")
    #expect(try deletesSent(page, afterClosing: 3).count == 1)
    try page.waitFor("\(Self.shownValues) === '[\"pears\"]'")
    #expect(try storedValues("groceries", server) == "[\"pears\"]")

    // A section: named, with how many items go with it ("1 item").
    #expect(
      try ask(page, "delete-s\(section)")
        == "Delete section \"Fruit\" and its 1 item? This cannot be undone.")
    try page.press("Escape")
    #expect(try deletesSent(page, afterClosing: 4).count == 1)
    #expect(try storedValues("groceries", server) == "[\"pears\"]")
    _ = try ask(page, "delete-s\(section)")
    try page.tab(to: "confirm-delete")
    try page.press("Enter")
    #expect(try deletesSent(page, afterClosing: 5).count == 2)
    try page.waitFor("document.body.innerText.includes('No sections yet.')")
    let shown = try showJSON("groceries", location: server.databasePath)
    #expect((shown?["sections"] as? [Any])?.isEmpty == true)
  }

  @Test func aSectionsQuestionCountsItsItems() throws {
    let server = try start()
    defer { server.remove() }
    expectSuccess(
      try liststore(["item", "add", "groceries", "0", "plums"], database: server.databasePath))
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/groceries")
    try page.waitFor("document.querySelectorAll('li').length === 3")
    let section = try page.evaluate("document.querySelector('section').dataset.id") as? String ?? ""
    #expect(
      try ask(page, "delete-s\(section)")
        == "Delete section \"Fruit\" and its 3 items? This cannot be undone.")
  }
}
