import Foundation
import ListStoreClientTesting
import TestSupport
import Testing

/// The lists page, and a list as a whole on its page: counted, renamed, deleted, missing.
extension LivePageTests {
  @Test func theListsPageCountsOneSectionAndOneItemInTheSingular() throws {
    let server = try start()
    defer { server.remove() }
    for step in [
      ["list", "create", "single"], ["section", "add", "single", "Only"],
      ["item", "add", "single", "0", "one"],
    ] {
      expectSuccess(try liststore(step, database: server.databasePath))
    }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/")
    try page.waitFor(
      "document.body.innerText.includes('single — 1 section, 1 item')"
        + " && document.body.innerText.includes('groceries — 1 section, 2 items')")
    let text = try page.evaluate("document.body.innerText") as? String ?? ""
    #expect(!text.contains("1 sections") && !text.contains("1 items"), "\(text)")
    #expect(
      try page.evaluate("document.getElementById('status').textContent") as? String == "2 lists")
  }

  /// A name that is taken: the page says so, and the browser reports no error of its own
  /// (the failed request's promise is the page's, handled).
  @Test func aTakenNameIsSaidOnThePageAndNothingIsThrown() throws {
    let server = try start()
    defer { server.remove() }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    browser.watch("Runtime.exceptionThrown")
    try page.open(server.url + "/")
    try page.waitFor("document.getElementById('new-list') !== null")
    try page.evaluate(
      "document.getElementById('new-list').value = 'groceries';"
        + " document.querySelector('form').requestSubmit()")
    try page.waitFor(
      "document.getElementById('status').textContent.includes('already exists')")
    // A turn of the page's event loop later, an unhandled rejection would have been
    // reported.
    try page.evaluate("new Promise(resolve => setTimeout(resolve, 0))")
    let thrown = try? browser.nextEvent(
      "Runtime.exceptionThrown", session: page.session, timeout: 0)
    #expect(thrown == nil, "\(thrown ?? [:])")
    #expect(try server.repository.lists().map(\.name) == ["groceries"])
  }

  @Test func aListIsRenamedInPlaceAndThePageFollowsItsNewName() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    try page.evaluate("window.loadedOnce = true; window.entries = history.length")
    try page.editInPlace("rename-list", typing: "food & drink")
    // The address, the title and the heading say the new name, without a reload or a new
    // entry in the history, and the page is live on it.
    try page.waitFor(
      "location.pathname === '/lists/food%20%26%20drink'"
        + " && document.querySelector('h1').textContent === 'food & drink'"
        + " && document.getElementById('status').textContent === 'live'")
    #expect(try page.evaluate("window.loadedOnce === true") as? Bool == true)
    #expect(try page.evaluate("history.length === window.entries") as? Bool == true)
    #expect(try page.evaluate("document.title") as? String == "food & drink — ListStore")
    #expect(try page.focusedKey() == "rename-list")
    #expect(try server.repository.lists().map(\.name) == ["food & drink"])
    // It follows the list's stream under the new name.
    expectSuccess(
      try liststore(["item", "add", "food & drink", "0", "figs"], database: server.databasePath))
    try page.waitFor("\(Self.shownValues) === '[\"apples\",\"pears\",\"figs\"]'")
    #expect(!(try page.evaluate("document.body.innerText") as? String ?? "").contains("deleted"))
  }

  @Test func aListIsDeletedFromItsPageAfterAQuestion() throws {
    let server = try start()
    defer { server.remove() }
    for step in [
      ["section", "add", "groceries", "Veg"], ["item", "add", "groceries", "1", "leeks"],
      ["item", "add", "groceries", "1", "kale"], ["item", "add", "groceries", "1", "peas"],
    ] {
      expectSuccess(try liststore(step, database: server.databasePath))
    }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/groceries")
    try page.waitFor("document.querySelectorAll('li').length === 5")
    try page.evaluate(Self.recorder)
    let question = "Delete list \"groceries\": 2 sections, 5 items? This cannot be undone."
    #expect(try ask(page, "delete-list") == question)
    try page.press("Escape")
    #expect(try deletesSent(page, afterClosing: 1) == [])
    #expect(try server.repository.lists().map(\.name) == ["groceries"])
    #expect(try ask(page, "delete-list") == question)
    try page.tab(to: "confirm-delete")
    try page.press("Enter")
    #expect(try deletesSent(page, afterClosing: 2) == ["DELETE /v1/lists/groceries"])
    try page.waitFor("document.body.innerText.includes('This list was deleted.')")
    #expect(
      try page.evaluate("document.querySelector('main a[href=\"/\"]') !== null") as? Bool == true)
    #expect(try server.repository.lists().isEmpty)
  }

  @Test func aListThatNeverExistedSaysSoWithALinkToAllLists() throws {
    let server = try start()
    defer { server.remove() }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/nowhere")
    try page.waitFor("document.body.innerText.includes('No such list')")
    let text = try page.evaluate("document.body.innerText") as? String ?? ""
    #expect(!text.contains("deleted"), "\(text)")
    #expect(
      try page.evaluate("document.querySelector('main a[href=\"/\"]').textContent") as? String
        == "All lists")
    // A list deleted while it is shown still says so.
    try page.open(server.url + "/lists/groceries")
    try page.waitFor("\(Self.shownValues) === '[\"apples\",\"pears\"]'")
    expectSuccess(try liststore(["list", "rm", "groceries"], database: server.databasePath))
    try page.waitFor("document.body.innerText.includes('This list was deleted.')")
    #expect(!(try page.evaluate("document.body.innerText") as? String ?? "").contains("No such"))
  }
}
