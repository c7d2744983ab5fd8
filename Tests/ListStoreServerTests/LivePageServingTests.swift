import Foundation
import ListStoreClientTesting
import ListStoreServer
import TestSupport
import Testing

/// What the server answers the live page at the HTTP level: the permissions it draws its
/// controls by, its status for a list that does not exist, and its landing with a token.
@Suite struct LivePageServingTests {
  static let readerAndWriter = "reader read\nwriter write"

  @Test func permissionsSayWhatTheRequestsCredentialsMayDo() throws {
    let open = try TestServer()
    defer { open.remove() }
    let everyone = try http("GET", open.url + "/v1/permissions")
    #expect(everyone.status == 200)
    #expect(everyone.headers["content-type"]?.hasPrefix("application/json") == true)
    #expect(everyone.body == #"{"read":true,"write":true,"readLists":"*","writeLists":"*"}"#)
    #expect(try http("POST", open.url + "/v1/permissions", body: "{}").status == 405)

    let guarded = try TestServer(tokens: try .init(parsing: Self.readerAndWriter, file: "tokens"))
    defer { guarded.remove() }
    let url = guarded.url + "/v1/permissions"
    let readOnly = #"{"read":true,"write":false,"readLists":"*","writeLists":[]}"#
    let readWrite = #"{"read":true,"write":true,"readLists":"*","writeLists":"*"}"#
    let cases: [(query: String, headers: [String: String], body: String?)] = [
      ("", [:], nil),
      ("", ["Authorization": "Bearer nope"], nil),
      ("", ["Cookie": "liststore_token=nope"], nil),
      ("", ["Authorization": "Bearer reader"], readOnly),
      ("", ["Authorization": "Bearer writer"], readWrite),
      ("?access_token=reader", [:], readOnly),
      ("?access_token=writer", [:], readWrite),
      ("", ["Cookie": "liststore_token=reader"], readOnly),
      ("", ["Cookie": "liststore_token=writer"], readWrite),
    ]
    for (query, headers, body) in cases {
      let answer = try http("GET", url + query, headers: headers)
      if let body {
        #expect(answer.status == 200, "\(query) \(headers): \(answer)")
        #expect(answer.body == body, "\(query) \(headers)")
      } else {
        #expect(answer.status == 401, "\(query) \(headers): \(answer)")
        #expect(answer.object?["code"] as? String == "unauthorized")
      }
    }
  }

  /// The status of the live page at `path` on `server`, after checking it is the page.
  func pageStatus(_ server: TestServer, _ path: String, _ headers: [String: String] = [:])
    throws -> Int
  {
    let page = try http("GET", server.url + path, headers: headers)
    #expect(page.headers["content-type"] == "text/html; charset=utf-8", "\(path): \(page)")
    #expect(page.body.hasPrefix("<!doctype html>"), "\(path)")
    return page.status
  }

  @Test func aListThatDoesNotExistIsA404PageToThoseWhoMayReadIt() throws {
    let open = try TestServer()
    defer { open.remove() }
    _ = try open.repository.createList("here")
    #expect(try pageStatus(open, "/") == 200)
    #expect(try pageStatus(open, "/lists/here") == 200)
    #expect(try pageStatus(open, "/lists/nowhere") == 404)
    #expect(try pageStatus(open, "/lists/%2E") == 404)

    // Without credentials the server does not say which names exist: the page asks for a
    // token. With them, it does.
    let guarded = try TestServer(tokens: try .init(parsing: Self.readerAndWriter, file: "tokens"))
    defer { guarded.remove() }
    _ = try guarded.repository.createList("here")
    #expect(try pageStatus(guarded, "/lists/nowhere") == 200)
    #expect(try pageStatus(guarded, "/lists/nowhere", ["Cookie": "liststore_token=nope"]) == 200)
    #expect(try pageStatus(guarded, "/lists/nowhere", ["Cookie": "liststore_token=reader"]) == 404)
    #expect(try pageStatus(guarded, "/lists/nowhere", ["Authorization": "Bearer writer"]) == 404)
    #expect(try pageStatus(guarded, "/lists/here", ["Cookie": "liststore_token=reader"]) == 200)
  }

  @Test func anUnknownTokenInThePagesAddressGetsAPageSayingWhatToDo() throws {
    let guarded = try TestServer(tokens: try .init(parsing: Self.readerAndWriter, file: "tokens"))
    defer { guarded.remove() }
    let page = try http("GET", guarded.url + "/lists/here?access_token=wrong")
    #expect(page.status == 401)
    #expect(page.headers["content-type"] == "text/html; charset=utf-8")
    #expect(page.headers["www-authenticate"] == "Bearer error=\"invalid_token\"")
    #expect(page.headers["content-security-policy"]?.contains("script-src 'unsafe-inline'") == true)
    #expect(page.headers["set-cookie"] == nil)
    #expect(page.body.hasPrefix("<!doctype html>"))
    #expect(page.body.contains("not known to this server"))
    #expect(page.body.contains("<a href=\"/lists/here\">/lists/here</a>?access_token=TOKEN"))
    // The address is written into the page as text, never as markup.
    let odd = try http("GET", guarded.url + "/lists/%3Cb%3E%22?access_token=wrong")
    #expect(odd.status == 401)
    #expect(odd.body.contains("/lists/%3Cb%3E%22"))
    let raw = try http("GET", guarded.url + "/lists/<b>\"?access_token=wrong")
    #expect(!raw.body.contains("<b>"), "\(raw)")
    // A server without tokens says it needs none.
    let open = try TestServer()
    defer { open.remove() }
    let needless = try http("GET", open.url + "/?access_token=wrong")
    #expect(needless.status == 401)
    #expect(needless.headers["content-type"] == "text/html; charset=utf-8")
    #expect(needless.body.contains("needs no token"))
  }

  /// D11 and the landing's other attacks: its redirect stays on this server, a link from
  /// another site does not choose the browser's token, and a server behind an HTTPS proxy
  /// can mark the cookie Secure.
  @Test func theTokenLandingStaysHereAndTakesNoTokenFromAnotherSite() throws {
    let tokens = try Tokens(parsing: Self.readerAndWriter, file: "tokens")
    let guarded = try TestServer(tokens: tokens)
    defer { guarded.remove() }
    let port = try #require(Int(guarded.url.split(separator: ":").last ?? ""))
    func landing(_ target: String, _ headers: String = "") -> String {
      guard let connection = try? RawConnection(port: port) else { return "" }
      connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\(headers)Connection: close\r\n\r\n")
      return connection.readAll()
    }
    for target in ["//lists/demo", "//evil.example/lists/x", "/\\evil.example", "///lists/demo"] {
      let answer = landing(target + "?access_token=reader")
      let location = answer.split(separator: "\r\n").first { $0.hasPrefix("Location: ") }
      // The page's own path, or no page (and so no redirect) at all.
      #expect(
        location == "Location: /lists/demo" || location == "Location: /"
          || (location == nil && answer.hasPrefix("HTTP/1.1 404")), "\(target): \(answer)")
    }
    #expect(landing("/lists/a%20b?access_token=reader").contains("Location: /lists/a%20b\r\n"))
    // From another site: 403, a page, no cookie.
    for site in ["cross-site", "same-site"] {
      let answer = landing("/lists/demo?access_token=reader", "Sec-Fetch-Site: \(site)\r\n")
      #expect(answer.hasPrefix("HTTP/1.1 403"), "\(site): \(answer.prefix(200))")
      #expect(!answer.contains("Set-Cookie"), "\(answer)")
      #expect(answer.contains("paste the address"), "\(answer)")
    }
    // Typed, pasted or bookmarked (or a client that says nothing): kept.
    let typed = landing("/lists/demo?access_token=reader", "Sec-Fetch-Site: none\r\n")
    #expect(typed.hasPrefix("HTTP/1.1 303") && typed.contains("Set-Cookie: liststore_token=reader"))
    #expect(!typed.contains("Secure"), "\(typed)")
    // Behind an HTTPS proxy, with --secure-cookies.
    let folder = TemporaryDirectory()
    defer { folder.remove() }
    try Data(Self.readerAndWriter.utf8).write(to: URL(fileURLWithPath: folder.file("tokens")))
    let proxied = try ServerProcess(
      location: folder.file("lists.sqlite"),
      arguments: ["--tokens", folder.file("tokens"), "--secure-cookies"])
    defer { proxied.stop() }
    let cookie = try http("GET", proxied.base + "/lists/demo?access_token=reader")
    #expect(cookie.headers["set-cookie"]?.hasSuffix("; Secure") == true, "\(cookie)")
  }
}
