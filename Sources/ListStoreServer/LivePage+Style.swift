// The live page's styles.
extension LivePage {
  /// The rules of the page's `<style>`: light and dark, a 390-pixel phone to a desktop.
  static let style = #"""
    :root { color-scheme: light dark; --accent: #2563eb; --muted: #6b7280; --flash: #fde68a; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 16px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; }
    header { display: flex; flex-wrap: wrap; gap: .5rem 1rem; align-items: baseline;
      padding: .75rem 1rem; border-bottom: 1px solid #8884; }
    header a { font-weight: 600; color: inherit; text-decoration: none; }
    #status { color: var(--muted); font-size: .9rem; }
    #status.offline { color: #b91c1c; }
    main { max-width: 48rem; margin: 0 auto; padding: 1rem; }
    h1 { font-size: 1.4rem; margin: 0 0 1rem; overflow-wrap: anywhere; }
    section { border: 1px solid #8884; border-radius: .5rem; margin: 0 0 1rem; padding: .75rem; }
    h2 { font-size: 1.1rem; margin: 0; overflow-wrap: anywhere; }
    .footer { color: var(--muted); font-size: .9rem; margin: .5rem 0 0; }
    ol { list-style: none; margin: .5rem 0; padding: 0; }
    li { display: flex; flex-wrap: wrap; align-items: center; gap: .25rem .5rem;
      padding: .35rem .25rem; border-radius: .25rem; }
    li + li { border-top: 1px solid #8882; }
    li.flash, section.flash > .titles { animation: flash 1.2s ease-out; }
    @keyframes flash { from { background: var(--flash); } to { background: transparent; } }
    .value { flex: 1 1 10rem; min-width: 0; overflow-wrap: anywhere; }
    /* A row of buttons keeps to one line: beside the text while both fit, else below it
       on a line of its own, at the right. */
    .row { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center;
      flex: none; max-width: 100%; margin-left: auto; }
    li > .row { flex-wrap: nowrap; }
    .titles { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center; }
    .titles h2, .titles h1 { flex: 1 1 10rem; margin: 0; }
    .list-titles { margin: 0 0 1rem; }
    button, input { font: inherit; }
    button { padding: .3rem .6rem; border: 1px solid #8886; border-radius: .35rem;
      background: transparent; color: inherit; cursor: pointer; min-height: 2.25rem; }
    button:focus-visible, input:focus-visible, a:focus-visible, li:focus-visible {
      outline: 3px solid var(--accent); outline-offset: 2px; }
    input[type=text] { flex: 1 1 10rem; min-width: 0; padding: .35rem .5rem;
      border: 1px solid #8886; border-radius: .35rem; min-height: 2.25rem; }
    form { display: flex; flex-wrap: wrap; gap: .5rem; margin: .5rem 0 0; }
    .lists a { display: block; padding: .5rem 0; }
    .muted { color: var(--muted); }
    [draggable=true] .handle { cursor: grab; }
    .handle { user-select: none; color: var(--muted); padding: 0 .25rem; }
    .drop { outline: 2px dashed var(--accent); }
    dialog { max-width: min(30rem, calc(100vw - 2rem)); padding: 1rem; border: 1px solid #8886;
      border-radius: .5rem; }
    dialog::backdrop { background: #0008; }
    dialog p { margin: 0 0 1rem; overflow-wrap: anywhere; }
    .actions { display: flex; flex-wrap: wrap; justify-content: flex-end; gap: .5rem; }
    button.danger { background: #b91c1c; border-color: #b91c1c; color: #fff; }
    @media (max-width: 30rem) {
      main { padding: 1rem .75rem; }
      section { padding: .75rem .5rem; }
      button { padding: .3rem .5rem; }
      .row { gap: .25rem .375rem; }
    }
    .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden;
      clip: rect(0 0 0 0); white-space: nowrap; }
    """#
}
