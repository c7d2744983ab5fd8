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
}
