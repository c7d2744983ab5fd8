import Foundation
import ListStoreClientTesting
import TestSupport
import Testing

/// Sections on the live page: their footers edited in place, and their moves.
extension LivePageTests {
  /// The sections `liststore show --json` prints for `list`.
  func storedSections(_ list: String, _ server: TestServer) throws -> [[String: Any]] {
    try showJSON(list, location: server.databasePath)?["sections"] as? [[String: Any]] ?? []
  }

  static let footer =
    "(document.querySelector('section .footer') || { textContent: null }).textContent"

  @Test func aFooterIsEditedInPlaceAndAnEmptyOneRemovesIt() throws {
    let server = try start()
    defer { server.remove() }
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    let section = try page.evaluate("document.querySelector('section').dataset.id") as? String ?? ""
    // Footer: the field holds the footer, selected; what is typed replaces it.
    try page.tab(to: "footer-s\(section)")
    try page.press("Enter")
    try page.waitFor(
      "document.activeElement.tagName === 'INPUT' && document.activeElement.value === 'fresh'")
    try page.type("ripe")
    try page.press("Enter")
    try page.waitFor("\(Self.footer) === 'ripe'")
    #expect(try storedSections("groceries", server).first?["footer"] as? String == "ripe")
    #expect(try page.focusedKey() == "footer-s\(section)")
    // Emptied, it goes: `footer: null`.
    try page.press("Enter")
    try page.waitFor("document.activeElement.tagName === 'INPUT'")
    try page.press("Backspace")
    try page.press("Enter")
    try page.waitFor("document.querySelector('section .footer') === null")
    let stored = try storedSections("groceries", server).first
    #expect(stored?["footer"] is NSNull)
    #expect(stored?["header"] as? String == "Fruit")
    // A section without a footer gets one the same way.
    try page.tab(to: "footer-s\(section)")
    try page.press("Enter")
    try page.waitFor("document.activeElement.tagName === 'INPUT'")
    try page.type("in season")
    try page.press("Enter")
    try page.waitFor("\(Self.footer) === 'in season'")
    #expect(try storedSections("groceries", server).first?["footer"] as? String == "in season")
    // Escape gives up.
    try page.tab(to: "footer-s\(section)")
    try page.press("Enter")
    try page.waitFor("document.activeElement.tagName === 'INPUT'")
    try page.type("never saved")
    try page.press("Escape")
    try page.waitFor("\(Self.footer) === 'in season'")
    #expect(try storedSections("groceries", server).first?["footer"] as? String == "in season")
  }

  @Test func aFooterOfMetadataOfAnotherShapeKeepsItsOtherFields() throws {
    let server = try start()
    defer { server.remove() }
    let added = try http(
      "POST", server.url + "/v1/lists/groceries/sections",
      body: "{\"metadata\":{\"header\":\"Veg\",\"color\":\"green\"}}")
    let section = try #require(added.object?["id"] as? Int, "\(added)")
    let (browser, page) = try openGroceries(server)
    defer { browser.close() }
    func metadata() throws -> NSDictionary? {
      try storedSections("groceries", server).last?["metadata"] as? NSDictionary
    }
    try page.tab(to: "footer-s\(section)")
    try page.press("Enter")
    try page.waitFor("document.activeElement.tagName === 'INPUT'")
    try page.type("crisp")
    try page.press("Enter")
    try page.waitFor(
      "(document.querySelectorAll('section')[1].querySelector('.footer') || {}).textContent"
        + " === 'crisp'")
    #expect(try metadata() == ["header": "Veg", "color": "green", "footer": "crisp"])
    try page.press("Enter")
    try page.waitFor("document.activeElement.tagName === 'INPUT'")
    try page.press("Backspace")
    try page.press("Enter")
    try page.waitFor("document.querySelectorAll('section')[1].querySelector('.footer') === null")
    #expect(try metadata() == ["header": "Veg", "color": "green"])
  }
}
