import Foundation
import ListStoreClientTesting
import ListStoreServer
import PostgresTestSupport
import TestSupport
import Testing

/// The live page in a real browser (headless Chromium over the DevTools protocol): it
/// shows what other clients change, what it changes reaches them, it catches up after a
/// reconnection, and it can be worked with the keyboard alone. Screenshots at desktop and
/// phone widths are kept in `.build/test-artifacts/browser` (or `$LISTSTORE_ARTIFACTS`).
///
/// More of the suite by concern: the lists page and a list as a whole (`+Lists`),
/// sections (`+Sections`), the question before a delete (`+Confirmation`), and what the
/// page shows by its credentials (`+Access`).
@Suite(.serialized, .browser) struct LivePageTests {
  /// A server over a fresh database with a list "groceries" (made by the CLI on the file,
  /// as another process) holding one section with two items.
  func start() throws -> TestServer {
    let server = try TestServer()
    for step in [
      ["list", "create", "groceries"],
      ["section", "add", "groceries", "Fruit", "--footer", "fresh"],
      ["item", "add", "groceries", "0", "apples"], ["item", "add", "groceries", "0", "pears"],
    ] {
      expectSuccess(try liststore(step, database: server.databasePath))
    }
    return server
  }

  /// The values the page shows, in order, section by section.
  static let shownValues =
    "JSON.stringify([...document.querySelectorAll('li .value')].map(node => node.textContent))"

  /// The values `liststore show --json` prints for `list`, in order.
  func storedValues(_ list: String, _ server: TestServer) throws -> String {
    let shown = try showJSON(list, location: server.databasePath)
    let sections = shown?["sections"] as? [[String: Any]] ?? []
    let values = sections.flatMap {
      ($0["items"] as? [[String: Any]] ?? []).map { "\($0["value"] ?? "")" }
    }
    return String(decoding: try JSONSerialization.data(withJSONObject: values), as: UTF8.self)
  }

  /// A browser with the list "groceries" of `start()` open and shown.
  func openGroceries(_ server: TestServer) throws -> (HeadlessBrowser, BrowserPage) {
    let browser = try HeadlessBrowser()
    do {
      let page = try browser.newPage()
      try page.open(server.url + "/lists/groceries")
      try page.waitFor("\(Self.shownValues) === '[\"apples\",\"pears\"]'")
      return (browser, page)
    } catch {
      browser.close()
      throw error
    }
  }

  func artifact(_ name: String, _ data: Data) throws {
    let folder =
      ProcessInfo.processInfo.environment["LISTSTORE_ARTIFACTS"]
      ?? productsDirectory + "/../../test-artifacts/browser"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    try data.write(to: URL(fileURLWithPath: folder + "/" + name))
  }

  @Test func thePageShowsAChangeMadeByTheCLIWithoutReloading() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    try page.evaluate("window.loadedOnce = true")  // gone if the page reloaded
    expectSuccess(
      try liststore(
        ["item", "add", "groceries", "0", "kiwis", "--at", "1"], database: server.databasePath))
    try page.waitFor("\(Self.shownValues) === '[\"apples\",\"kiwis\",\"pears\"]'")
    #expect(try page.evaluate("window.loadedOnce === true") as? Bool == true)
    // The changed row flashes.
    #expect(
      try page.evaluate(
        "[...document.querySelectorAll('li')].find(li => li.textContent.includes('kiwis')).classList.contains('flash')"
      ) as? Bool == true)
    // The lists page names the list with its sizes.
    try page.open(server.url + "/")
    try page.waitFor("document.body.innerText.includes('groceries — 1 section, 3 items')")
  }

  @Test func editsAddsMovesAndDeletesWithTheKeyboardAloneReachShow() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    let ids =
      try page.evaluate(
        "[...document.querySelectorAll('li')].map(li => li.dataset.id).join(',')") as? String ?? ""
    let (apples, pears) = (
      ids.split(separator: ",").first ?? "", ids.split(separator: ",").last ?? ""
    )
    let section = try page.evaluate("document.querySelector('section').dataset.id") as? String ?? ""

    // Edit: Tab to the button, Enter, type over the value, Enter.
    try page.editInPlace("edit-\(apples)", typing: "green apples")
    try page.waitFor("\(Self.shownValues) === '[\"green apples\",\"pears\"]'")
    // Add: Tab to the section's field, type, Enter.
    try page.tab(to: "add-\(section)")
    try page.type("figs")
    try page.press("Enter")
    try page.waitFor("\(Self.shownValues) === '[\"green apples\",\"pears\",\"figs\"]'")
    // Move: the Down button of the first item.
    try page.tab(to: "down-\(apples)")
    try page.press("Enter")
    try page.waitFor("\(Self.shownValues) === '[\"pears\",\"green apples\",\"figs\"]'")
    // The focus stays on the button that was pressed, redrawn.
    #expect(try page.focusedKey() == "down-\(apples)")
    // Delete: asked first, with Cancel focused; Tab to Delete, Enter.
    try page.tab(to: "delete-\(pears)")
    try page.press("Enter")
    try page.waitFor("document.querySelector('dialog:modal') !== null")
    try page.tab(to: "confirm-delete")
    try page.press("Enter")
    try page.waitFor("\(Self.shownValues) === '[\"green apples\",\"figs\"]'")
    #expect(try storedValues("groceries", server) == "[\"green apples\",\"figs\"]")
    let shown = try liststore(["show", "groceries"], database: server.databasePath)
    #expect(shown.stdout.contains("0:0  green apples") && shown.stdout.contains("0:1  figs"))
  }

  /// An edit's answer that comes after its change was drawn — once the user went on to
  /// another control — leaves the focus where the user put it.
  @Test func anEditsLateAnswerLeavesTheFocusWhereTheUserWent() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    let apples = try page.evaluate("document.querySelector('li').dataset.id") as? String ?? ""
    let section = try page.evaluate("document.querySelector('section').dataset.id") as? String ?? ""
    // The answers to PATCH are held until the test lets them go; once the page has read
    // one, a task queued after its handler's last step marks it. The marks are attributes,
    // so that waitFor sees them come.
    try page.evaluate(
      """
      window.held = [];
      const original = window.fetch;
      window.fetch = (...args) => {
        const answer = original(...args);
        if (!args[1] || args[1].method !== 'PATCH') return answer;
        return answer.then(response => response.json()).then(body => new Promise(resolve =>
          document.documentElement.dataset.held = window.held.push(() => resolve({ ok: true,
            status: 200, json: () => Promise.resolve(body).then(value => {
              setTimeout(() => { document.documentElement.dataset.answered = 'yes'; });
              return value;
            }) }))));
      };
      true
      """)
    try page.editInPlace("edit-\(apples)", typing: "green apples")
    // Drawn from the stream while the answer is held; the user goes on to the add field.
    try page.waitFor("\(Self.shownValues) === '[\"green apples\",\"pears\"]'")
    try page.tab(to: "add-\(section)")
    try page.waitFor("document.documentElement.dataset.held === '1'")
    try page.evaluate("window.held.forEach(release => release()); true")
    try page.waitFor("document.documentElement.dataset.answered === 'yes'")
    #expect(try page.focusedKey() == "add-\(section)")
  }

  @Test func aReconnectionLosesNoChange() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    for round in 0..<2 {
      server.stop()
      try page.waitFor("document.getElementById('status').textContent.startsWith('offline')")
      for number in 0..<3 {
        expectSuccess(
          try liststore(
            ["item", "add", "groceries", "0", "r\(round)-\(number)"], database: server.databasePath)
        )
      }
      try server.start()
      let expected = try storedValues("groceries", server)
      try page.waitFor("\(Self.shownValues) === '\(expected)'")
      try page.waitFor("document.getElementById('status').textContent === 'live'")
    }
    #expect(
      try page.evaluate("document.querySelectorAll('li').length") as? Int == 8)
  }

  @Test func aTokenGivenOnceIsKeptInACookieTheScriptCannotRead() throws {
    let server = try TestServer(tokens: try .init(parsing: "secret write", file: "tokens"))
    defer { server.remove() }
    expectSuccess(try liststore(["list", "create", "private"], database: server.databasePath))
    expectSuccess(try liststore(["section", "add", "private", "S"], database: server.databasePath))
    expectSuccess(
      try liststore(["item", "add", "private", "0", "hidden"], database: server.databasePath))
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/private?access_token=secret")
    try page.waitFor("\(Self.shownValues) === '[\"hidden\"]'")
    #expect(try page.evaluate("location.search") as? String == "")
    #expect(try page.evaluate("document.cookie") as? String == "")
    // Writes go with the cookie too.
    let section = try page.evaluate("document.querySelector('section').dataset.id") as? String ?? ""
    try page.tab(to: "add-\(section)")
    try page.type("seen")
    try page.press("Enter")
    try page.waitFor("\(Self.shownValues) === '[\"hidden\",\"seen\"]'")
  }

  @Test func thePageFitsAPhoneAndADesktopAndScreenshotsAreKept() throws {
    let server = try start()
    defer { server.remove() }
    expectSuccess(
      try liststore(
        [
          "item", "add", "groceries", "0",
          "a value long enough to wrap on a narrow screen, which must not scroll sideways",
        ],
        database: server.databasePath))
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    for (name, width, height, mobile) in [("desktop", 1280, 900, false), ("phone", 390, 844, true)]
    {
      try page.setViewport(width: width, height: height, mobile: mobile)
      try page.open(server.url + "/lists/groceries")
      try page.waitFor("document.querySelectorAll('li').length === 3")
      #expect(
        try page.evaluate("document.documentElement.scrollWidth <= \(width)") as? Bool == true,
        "the \(name) page scrolls sideways")
      let png = try page.screenshot()
      #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
      try artifact("live-page-\(name).png", png)
    }
  }

  /// The buttons of every row of controls (an item's, a section's title bar, the list's):
  /// for each row, each button's `[left, top, width, height]`.
  static let buttonRows = """
    JSON.stringify([...document.querySelectorAll("li, .titles")].map(row =>
      [...row.querySelectorAll("button")].map(button => {
        const box = button.getBoundingClientRect();
        return [box.left, box.top, box.width, box.height].map(Math.round);
      })))
    """

  @Test func rowButtonsStayOnOneLineOnAPhone() throws {
    let server = try start()
    defer { server.remove() }
    for step in [
      [
        "item", "add", "groceries", "0",
        "a value long enough to wrap on a narrow screen, which must not scroll sideways",
      ],
      ["section", "add", "groceries", "Vegetables, herbs and everything else from the garden"],
      ["item", "add", "groceries", "1", "Unbreakable" + String(repeating: "x", count: 60)],
    ] {
      expectSuccess(try liststore(step, database: server.databasePath))
    }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.setViewport(width: 390, height: 844, mobile: true)
    try page.open(server.url + "/lists/groceries")
    try page.waitFor("document.querySelectorAll('li').length === 4")
    let text = try page.evaluate(Self.buttonRows) as? String ?? "[]"
    let rows = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[[Int]]] ?? []
    #expect(rows.count == 4 + 2 + 1, "\(rows)")
    for row in rows {
      #expect(Set(row.map { $0[1] }).count == 1, "buttons on more than one line: \(row)")
      #expect(row.allSatisfy { $0[3] >= 32 }, "buttons lower than 32 px: \(row)")
      #expect(row.allSatisfy { $0[0] >= 0 && $0[0] + $0[2] <= 390 }, "off the screen: \(row)")
    }
    #expect(try page.evaluate("document.documentElement.scrollWidth") as? Int == 390)
    try artifact("live-page-phone-rows.png", try page.screenshot())
  }
}
