import Foundation
import ListStoreClientTesting
import TestSupport
import Testing

/// The live page by what its credentials may do: controls only where they may write.
extension LivePageTests {
  /// A server with a read token and a write token, and a list "private" with one section
  /// of two items.
  func startGuarded() throws -> TestServer {
    let server = try TestServer(tokens: try .init(parsing: "reader read\nwriter write", file: "t"))
    for step in [
      ["list", "create", "private"], ["section", "add", "private", "S", "--footer", "f"],
      ["item", "add", "private", "0", "a"], ["item", "add", "private", "0", "b"],
    ] {
      expectSuccess(try liststore(step, database: server.databasePath))
    }
    return server
  }

  /// How many controls the page shows: buttons, forms, fields, drag handles.
  static let controls =
    "document.querySelectorAll('main button, main form, main input, main [draggable=true],"
    + " main .handle').length"

  @Test func aReadTokenSeesTheListsWithoutAControlToChangeThem() throws {
    let server = try startGuarded()
    defer { server.remove() }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/private?access_token=reader")
    try page.waitFor("\(Self.shownValues) === '[\"a\",\"b\"]'")
    #expect(try page.evaluate(Self.controls) as? Int == 0)
    // What it reads is all there: the header and the footer.
    #expect(try page.evaluate("document.querySelector('h2').textContent") as? String == "S")
    #expect(try page.evaluate("document.querySelector('.footer').textContent") as? String == "f")
    // It still follows the list.
    expectSuccess(
      try liststore(["item", "add", "private", "0", "c"], database: server.databasePath))
    try page.waitFor("\(Self.shownValues) === '[\"a\",\"b\",\"c\"]'")
    #expect(try page.evaluate(Self.controls) as? Int == 0)
    // The lists page has no form to make a list.
    try page.open(server.url + "/")
    try page.waitFor("document.body.innerText.includes('private — 1 section, 3 items')")
    #expect(try page.evaluate(Self.controls) as? Int == 0)

    // A write token's page has them all.
    try page.open(server.url + "/lists/private?access_token=writer")
    try page.waitFor("\(Self.shownValues) === '[\"a\",\"b\",\"c\"]'")
    #expect(try page.evaluate("document.querySelectorAll('main form').length") as? Int == 2)
    #expect(
      try page.evaluate("document.querySelectorAll('li[draggable=true]').length") as? Int == 3)
    #expect(try page.evaluate("document.querySelectorAll('li button').length") as? Int == 12)
  }

  /// A token limited to some lists: controls on the lists it may write only, and no page
  /// at all for a list outside its scope.
  @Test func aScopedTokenHasControlsOnlyOnTheListsItMayWrite() throws {
    let server = try TestServer(
      tokens: try .init(parsing: "scoped read private\nscoped write mine", file: "t"))
    defer { server.remove() }
    for name in ["private", "mine", "other"] {
      expectSuccess(try liststore(["demo", "--list", name], database: server.databasePath))
    }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/private?access_token=scoped")
    try page.waitFor("\(Self.shownValues) === '[\"Paris\",\"Berlin\",\"Copenhagen\"]'")
    #expect(try page.evaluate(Self.controls) as? Int == 0)
    try page.open(server.url + "/lists/mine")
    try page.waitFor("\(Self.shownValues) === '[\"Paris\",\"Berlin\",\"Copenhagen\"]'")
    #expect(try page.evaluate("document.querySelectorAll('main form').length") as? Int == 2)
    // The lists page lists the two it may read, not the third.
    try page.open(server.url + "/")
    try page.waitFor("document.body.innerText.includes('mine — 1 section, 3 items')")
    #expect(try page.evaluate("document.body.innerText.includes('other')") as? Bool == false)
  }

  @Test func anUnknownTokenInTheAddressGetsAPageSayingWhatToDo() throws {
    let server = try startGuarded()
    defer { server.remove() }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/private?access_token=wrong")
    try page.waitFor(
      "document.contentType === 'text/html'"
        + " && document.body.innerText.includes('not known to this server')")
    let text = try page.evaluate("document.body.innerText") as? String ?? ""
    #expect(text.contains("/lists/private?access_token=TOKEN"), "\(text)")
    #expect(!text.contains("{"), "\(text)")
    #expect(try page.evaluate("document.cookie") as? String == "")
    #expect(
      try page.evaluate("document.querySelector('a[href=\"/lists/private\"]') !== null") as? Bool
        == true)
  }

  @Test func withoutATokenThePageSaysHowToGiveOne() throws {
    let server = try startGuarded()
    defer { server.remove() }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    for path in ["/lists/private", "/", "/lists/a%20b"] {
      try page.open(server.url + path)
      let hint = "This server needs a token: open this page once as \(path)?access_token=TOKEN"
      try page.waitFor("document.body.innerText.includes('\(hint)')")
      let text = try page.evaluate("document.body.innerText") as? String ?? ""
      #expect(!text.contains("Loading"), "\(text)")
      #expect(try page.evaluate(Self.controls) as? Int == 0)
    }
  }
}
