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
    try page.editInPlace("footer-s\(section)", typing: "in season")
    try page.waitFor("\(Self.footer) === 'in season'")
    #expect(try storedSections("groceries", server).first?["footer"] as? String == "in season")
    // Escape gives up.
    try page.openEditor("footer-s\(section)")
    try page.type("never saved")
    try page.press("Escape")
    try page.waitFor("\(Self.footer) === 'in season'")
    #expect(try storedSections("groceries", server).first?["footer"] as? String == "in season")
    #expect(try page.focusedKey() == "footer-s\(section)")
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
    try page.editInPlace("footer-s\(section)", typing: "crisp")
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

  static let shownHeaders =
    "JSON.stringify([...document.querySelectorAll('section h2')].map(node => node.textContent))"

  /// The headers `liststore show --json` prints for `list`, in order.
  func storedHeaders(_ list: String, _ server: TestServer) throws -> [String] {
    try storedSections(list, server).map { $0["header"] as? String ?? "" }
  }

  @Test func sectionsMoveByTheirButtonsAndByDraggingTheirTitleBars() throws {
    let server = try start()
    defer { server.remove() }
    for step in [
      ["section", "add", "groceries", "Veg"], ["item", "add", "groceries", "1", "leeks"],
      ["section", "add", "groceries", "Bread"],
    ] {
      expectSuccess(try liststore(step, database: server.databasePath))
    }
    let browser = try HeadlessBrowser()
    defer { browser.close() }
    let page = try browser.newPage()
    try page.open(server.url + "/lists/groceries")
    try page.waitFor("\(Self.shownHeaders) === '[\"Fruit\",\"Veg\",\"Bread\"]'")
    let ids = try page.evaluate(
      "[...document.querySelectorAll('section')].map(node => node.dataset.id).join(',')")
    let sections = (ids as? String ?? "").split(separator: ",").map(String.init)
    try #require(sections.count == 3)
    let (fruit, veg, bread) = (sections[0], sections[1], sections[2])
    func disabled(_ key: String) throws -> Bool? {
      try page.evaluate("document.querySelector(\"[data-key='\(key)']\").disabled") as? Bool
    }
    // At the ends, ↑ of the first and ↓ of the last are disabled.
    #expect(try disabled("sup-\(fruit)") == true && disabled("sdown-\(fruit)") == false)
    #expect(try disabled("sup-\(veg)") == false && disabled("sdown-\(veg)") == false)
    #expect(try disabled("sup-\(bread)") == false && disabled("sdown-\(bread)") == true)

    // ↓ and ↑, with the keyboard; the focus stays on the button.
    try page.tab(to: "sdown-\(fruit)")
    try page.press("Enter")
    try page.waitFor("\(Self.shownHeaders) === '[\"Veg\",\"Fruit\",\"Bread\"]'")
    #expect(try storedHeaders("groceries", server) == ["Veg", "Fruit", "Bread"])
    #expect(try page.focusedKey() == "sdown-\(fruit)")
    try page.tab(to: "sup-\(bread)")
    try page.press("Enter")
    try page.waitFor("\(Self.shownHeaders) === '[\"Veg\",\"Bread\",\"Fruit\"]'")
    #expect(try storedHeaders("groceries", server) == ["Veg", "Bread", "Fruit"])

    // Dragged by its title bar onto another section, a section takes its place: going up,
    // before it; going down, after it.
    try page.drag(
      from: "section[data-id='\(fruit)'] .titles h2", to: "section[data-id='\(veg)'] ol")
    try page.waitFor("\(Self.shownHeaders) === '[\"Fruit\",\"Veg\",\"Bread\"]'")
    #expect(try storedHeaders("groceries", server) == ["Fruit", "Veg", "Bread"])
    try page.drag(
      from: "section[data-id='\(fruit)'] .titles h2", to: "section[data-id='\(bread)'] h2")
    try page.waitFor("\(Self.shownHeaders) === '[\"Veg\",\"Bread\",\"Fruit\"]'")
    #expect(try storedHeaders("groceries", server) == ["Veg", "Bread", "Fruit"])

    // An item dragged onto another still moves the item, not its section.
    try page.drag(
      from: "section[data-id='\(fruit)'] li:last-child .value",
      to: "section[data-id='\(veg)'] li .value")
    try page.waitFor("\(Self.shownValues) === '[\"pears\",\"leeks\",\"apples\"]'")
    #expect(try storedValues("groceries", server) == "[\"pears\",\"leeks\",\"apples\"]")
    #expect(try storedHeaders("groceries", server) == ["Veg", "Bread", "Fruit"])
  }
}
