/// The live page served at `/` and `/lists/NAME`: one HTML document with its styles and
/// script inline (no outside files, fonts or build step), which shows the lists, and one
/// list updated from its change stream, with forms and buttons to change it.
///
/// The document is put together from pieces by concern: the styles (`LivePage+Style`),
/// the script's state, requests, confirmation and lists page (`LivePage+Script`), its change stream
/// (`LivePage+Stream`) and its drawing of one list (`LivePage+Render`).
enum LivePage {
  static let html =
    """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>ListStore</title>
    <style>

    """ + style
      + """

      </style>
      </head>
      <body>
      <header><a href="/">ListStore</a><span id="status" role="status" aria-live="polite"></span></header>
      <main id="main"><p class="muted">Loading…</p></main>
      <script>
      "use strict";

      """ + [core, confirmation, listsPage, stream, render, startup].joined(separator: "\n\n")
      + """

      </script>
      </body>
      </html>
      """
}
