import Dispatch
import FoundationEssentials
import ListStore
import ListStoreFormats
import Observable2D
import ReactiveCore

// Tokens, the page's cookie, and the live page's landing.
extension ListServer {
  /// What the request's credentials may do: its bearer token, `?access_token=`, or the
  /// live page's cookie (for a write, only with `X-Requested-With: liststore`).
  /// - Throws: ``APIFailure`` 401 without a token the server knows, 403 for a cookie write
  ///   without the header.
  func authorize(_ request: HTTPRequest) throws -> Tokens.Grant {
    guard let tokens = currentTokens else { return .everything }
    let token = try credential(request)
    guard let grant = tokens.grant(for: token) else {
      throw APIFailure(
        401, "unauthorized", "the token is not known to this server",
        headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")])
    }
    return grant
  }

  /// The token a request carries: its bearer token, `?access_token=`, or the live page's
  /// cookie; `nil` on a server without tokens.
  /// - Throws: ``APIFailure`` 401 when it carries none, 403 for a cookie write without
  ///   `X-Requested-With: liststore`.
  func credential(_ request: HTTPRequest) throws -> String {
    var token: String?
    if let header = request.headers["authorization"] {
      let parts = header.split(separator: " ", maxSplits: 1)
      if parts.count == 2, parts[0].lowercased() == "bearer" {
        token = String(parts[1]).trimmingSpaces()
      }
    }
    token = token ?? request.query["access_token"]
    if token == nil, let cookie = Self.cookie(request) {
      // A cookie goes with any request the browser sends, whichever page asked: a write
      // must also carry a header that only a script of this origin can add (another
      // origin's would need a preflight, which this server does not grant).
      if request.method != "GET" && request.method != "HEAD"
        && request.headers["x-requested-with"] != "liststore"
      {
        throw APIFailure(
          403, "forbidden",
          "a write authorized by the page's cookie needs 'X-Requested-With: liststore'")
      }
      token = cookie
    }
    guard let token else {
      throw APIFailure(
        401, "unauthorized", "this server needs a token: send 'Authorization: Bearer TOKEN'",
        headers: [("WWW-Authenticate", "Bearer")])
    }
    return token
  }

  /// Reads the tokens file again (on SIGHUP): new requests are authorized by it, and the
  /// streams whose token no longer covers their list end with `event: error`.
  /// - Parameter path: The tokens file.
  /// - Throws: ``ServerError`` when the file cannot be read or holds a malformed line;
  ///   the tokens in force stay then.
  public func reloadTokens(from path: String) throws(ServerError) {
    let fresh = try Tokens(contentsOf: path)
    tokens.withLock { $0 = fresh }
    http.loop.execute { [self] in
      for stream in Array(streams.values) {
        guard let token = stream.token else { continue }
        if fresh.grant(for: token)?.mayRead(stream.feed.name) != true {
          stream.revoke()
        }
      }
    }
  }

  /// `GET /v1/permissions`: what the request's credentials may do, as one object — the
  /// live page draws its controls by it: `read` and `write` whether it may read or
  /// write any list, `readLists` and `writeLists` which (`"*"` for every list).
  static func permissions(_ grant: Tokens.Grant) -> HTTPResponse {
    func lists(_ scope: Tokens.Scope) -> String {
      switch scope {
      case .all: return "\"*\""
      case .lists(let names):
        return "[" + names.sorted().map(JSONText.quote).joined(separator: ",") + "]"
      }
    }
    return .json(
      200,
      "{\"read\":\(!grant.read.isEmpty),\"write\":\(!grant.write.isEmpty),"
        + "\"readLists\":\(lists(grant.read)),\"writeLists\":\(lists(grant.write))}")
  }

  /// The token the live page keeps in its cookie.
  static let cookieName = "liststore_token"

  /// The token of the request's cookie, if it has one.
  static func cookie(_ request: HTTPRequest) -> String? {
    guard let header = request.headers["cookie"] else { return nil }
    for pair in header.split(separator: ";") {
      let parts = pair.split(separator: "=", maxSplits: 1)
      if parts.count == 2, String(parts[0]).trimmingSpaces() == cookieName {
        return String(parts[1]).trimmingSpaces()
      }
    }
    return nil
  }

  /// `GET /` and `GET /lists/NAME`: the live page. A known `?access_token=` is kept in an
  /// HttpOnly, SameSite=Strict cookie, and the page is asked for again without it, so that
  /// the token leaves the address bar and the history.
  ///
  /// The page of a list that does not exist comes with 404 (the page then says so) — to a
  /// request that may read lists only: to others it comes with 200 and asks for a token,
  /// so that which names exist does not leak.
  func livePage(_ request: HTTPRequest) throws -> HTTPResponse {
    guard request.method == "GET" || request.method == "HEAD" else {
      throw Self.notAllowed(request, allow: "GET")
    }
    if let token = request.query["access_token"] {
      // A person opened this address: the answer is a page that says what to do.
      guard currentTokens?.grant(for: token) != nil else {
        let page = LivePage.unknownToken(
          path: landingPath(request), serverHasTokens: currentTokens != nil)
        return HTTPResponse(
          status: 401,
          headers: Self.pageHeaders + [("WWW-Authenticate", "Bearer error=\"invalid_token\"")],
          body: Array(page.utf8))
      }
      // A link from another site must not sign this browser in with a token of that
      // site's choosing (login CSRF): browsers say where a navigation came from.
      if let site = request.headers["sec-fetch-site"]?.lowercased(),
        site == "cross-site" || site == "same-site"
      {
        return HTTPResponse(
          status: 403, headers: Self.pageHeaders,
          body: Array(LivePage.tokenFromElsewhere(path: landingPath(request)).utf8))
      }
      let secure = configuration.tls != nil || configuration.secureCookies ? "; Secure" : ""
      return HTTPResponse(
        status: 303,
        headers: [
          // The page's own path, rebuilt: never `//host…`, which a browser would follow
          // to another site.
          ("Location", landingPath(request)),
          ("Set-Cookie", "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict" + secure),
        ])
    }
    var status = 200
    if let path = request.segments, path.count == 2, let grant = try? authorize(request) {
      // A list outside the token's scope is a missing one.
      if !grant.mayRead(path[1]) { status = 404 }
      do {
        _ = try readers.withReader { try $0.listID(named: path[1]) }
      } catch ListStoreError.listNotFound {
        status = 404
      } catch {
        // Another failure (a busy database): the page meets it too, and says so.
      }
    }
    return HTTPResponse(status: status, headers: Self.pageHeaders, body: Array(LivePage.html.utf8))
  }

  /// The path of the page a landing request asked for, rebuilt from its segments.
  func landingPath(_ request: HTTPRequest) -> String {
    guard let segments = request.segments, segments.count == 2 else { return "/" }
    return "/lists/" + LivePage.pathSegment(segments[1])
  }

  /// The headers of the server's pages: HTML, checked again on each visit, and nothing
  /// from elsewhere (the inline script and styles only).
  static let pageHeaders = [
    ("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-cache"),
    (
      "Content-Security-Policy",
      "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
        + "img-src 'self' data:; frame-ancestors 'none'"
    ),
    ("X-Content-Type-Options", "nosniff"),
  ]
}
