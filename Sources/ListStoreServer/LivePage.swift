/// The live page served at `/` and `/lists/NAME`: one HTML document with its styles and
/// script inline (no outside files, fonts or build step), which shows the lists, and one
/// list updated from its change stream, with forms and buttons to change it.
///
/// The document is put together from pieces by concern: the styles (`LivePage+Style`),
/// the script's state, requests, confirmation and lists page (`LivePage+Script`), its
/// change stream (`LivePage+Stream`) and its drawing of one list (`LivePage+Render`).
enum LivePage {
  static let html = document(
    title: "ListStore", main: #"<p class="muted">Loading…</p>"#,
    script: [core, confirmation, listsPage, stream, render, startup].joined(separator: "\n\n"))

  /// The page for an address whose `?access_token=` the server does not know (answered
  /// with 401): what is wrong and what to do, with the address `path` to open again.
  /// - Parameters:
  ///   - path: The address without its query, as the request gave it.
  ///   - serverHasTokens: Whether the server takes tokens at all.
  /// - Returns: The HTML document.
  static func unknownToken(path: String, serverHasTokens: Bool) -> String {
    let link = "<a href=\"\(escaped(path))\">\(escaped(path))</a>"
    guard serverHasTokens else {
      return document(
        title: "No token needed — ListStore",
        main: """
          <h1>No token needed</h1>
          <p>This server needs no token: it serves everyone. Open \(link) without one.</p>
          """)
    }
    return document(
      title: "Unknown token — ListStore",
      main: """
        <h1>Unknown token</h1>
        <p>The token in this address is not known to this server: it may be mistyped, or no
        longer in the server's tokens file.</p>
        <p>Open \(link)?access_token=TOKEN again, with TOKEN a token of that file (the one
        <code>liststore serve --tokens FILE</code> reads); whoever runs the server can give
        you one. The page keeps it in a cookie: once is enough.</p>
        """)
  }

  /// The page for a link that carries a token and came from another site: the token is
  /// not kept (another site must not choose which token this browser signs in with).
  static func tokenFromElsewhere(path: String) -> String {
    let link = "<a href=\"\(escaped(path))\">\(escaped(path))</a>"
    return document(
      title: "Sign in from this server — ListStore",
      main: """
        <h1>Sign in from here</h1>
        <p>This address carries a token, and it was opened from another site. So that no
        other site can sign this browser in with a token of its choosing, the token was not
        kept.</p>
        <p>To use it, paste the address with its <code>?access_token=</code> into the
        address bar yourself; or open \(link) and follow the sign-in hint.</p>
        """)
  }

  /// `name` as one segment of a path: everything but RFC 3986's unreserved characters
  /// percent-encoded, and `.` too, so that `.` and `..` stay names.
  static func pathSegment(_ name: String) -> String {
    var encoded = ""
    for byte in name.utf8 {
      switch byte {
      case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
        UInt8(ascii: "~"):
        encoded.unicodeScalars.append(Unicode.Scalar(byte))
      default:
        let hex = Array("0123456789ABCDEF".utf8)
        encoded +=
          "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
      }
    }
    return encoded
  }

  /// A page of the server: the styles and header of the live page around `main`, and
  /// `script` if any.
  /// - Parameters:
  ///   - title: The document's title, as HTML.
  ///   - main: The contents of its `<main>`, as HTML.
  ///   - script: The text of its `<script>`, if any.
  /// - Returns: The HTML document.
  static func document(title: String, main: String, script: String? = nil) -> String {
    """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>\(title)</title>
    <style>
    \(style)
    </style>
    </head>
    <body>
    <header><a href="/">ListStore</a><span id="status" role="status" aria-live="polite"></span></header>
    <main id="main">\(main)</main>

    """
      + (script.map { "<script>\n\"use strict\";\n\n" + $0 + "\n</script>\n" } ?? "")
        + """
        </body>
        </html>
        """
  }

  /// `text` as HTML text or attribute value: `&`, `<`, `>`, `"` and `'` as references.
  /// - Parameter text: Any text.
  /// - Returns: The text, escaped.
  static func escaped(_ text: String) -> String {
    var result = ""
    for character in text {
      switch character {
      case "&": result += "&amp;"
      case "<": result += "&lt;"
      case ">": result += "&gt;"
      case "\"": result += "&quot;"
      case "'": result += "&#39;"
      default: result.append(character)
      }
    }
    return result
  }
}
