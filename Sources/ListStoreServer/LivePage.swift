/// The live page served at `/` and `/lists/NAME`: one HTML document with its styles and
/// script inline (no outside files, fonts or build step), which shows the lists, and one
/// list updated from its change stream, with forms and buttons to change it.
enum LivePage {
  static let html = """
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>ListStore</title>
    <style>
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
    .row { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center; }
    .titles { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: center; }
    .titles h2 { flex: 1 1 10rem; }
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
    li.drop { outline: 2px dashed var(--accent); }
    .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden;
      clip: rect(0 0 0 0); white-space: nowrap; }
    </style>
    </head>
    <body>
    <header><a href="/">ListStore</a><span id="status" role="status" aria-live="polite"></span></header>
    <main id="main"><p class="muted">Loading…</p></main>
    <script>
    "use strict";
    const main = document.getElementById("main");
    const statusLine = document.getElementById("status");
    const state = { name: null, sections: [], seq: 0, source: null };
    window.liststore = state;

    function setStatus(text, offline) {
      statusLine.textContent = text;
      statusLine.classList.toggle("offline", !!offline);
    }
    function element(tag, properties, ...children) {
      const node = document.createElement(tag);
      Object.assign(node, properties || {});
      for (const child of children) if (child != null) node.append(child);
      return node;
    }
    // A name as a path segment; "." too, so that "." and ".." stay names.
    function segment(name) { return encodeURIComponent(name).replace(/\\./g, "%2E"); }
    function path(name) { return "/v1/lists/" + segment(name); }
    async function api(method, url, body) {
      const headers = { "X-Requested-With": "liststore" };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const response = await fetch(url, {
        method, headers, credentials: "same-origin",
        body: body === undefined ? undefined : JSON.stringify(body) });
      if (!response.ok) {
        let message = response.status + " " + response.statusText;
        try { message = (await response.json()).error || message; } catch (_) {}
        setStatus(message, true);
        throw new Error(message);
      }
      return response.status === 204 ? null : response.json();
    }
    // A stored value as people read it: a string as it is, anything else as JSON.
    function display(value) { return typeof value === "string" ? value : JSON.stringify(value); }
    function parsed(text, before) {
      if (typeof before === "string") return text;
      try { return JSON.parse(text); } catch (_) { return text; }
    }

    // MARK: The lists

    async function showLists() {
      document.title = "ListStore";
      const { lists } = await api("GET", "/v1/lists");
      const form = element("form", { ariaLabel: "New list" },
        element("label", { className: "sr-only", htmlFor: "new-list" }, "New list"),
        element("input", { type: "text", id: "new-list", placeholder: "New list name", required: true }),
        element("button", { type: "submit" }, "Create list"));
      form.onsubmit = async event => {
        event.preventDefault();
        const name = form.querySelector("input").value.trim();
        if (!name) return;
        await api("PUT", path(name));
        location.href = "/lists/" + segment(name);
      };
      main.replaceChildren(element("h1", {}, "Lists"),
        lists.length ? element("nav", { className: "lists" }, ...lists.map(list => element("a",
          { href: "/lists/" + segment(list.name) },
          list.name + " — " + list.sections + " sections, " + list.items + " items")))
          : element("p", { className: "muted" }, "No lists yet."), form);
      setStatus(lists.length + " lists");
    }

    // MARK: One list, live

    // Follows the list's change stream: from a snapshot, or after `after` (a resumption).
    function follow(name, after) {
      state.name = name;
      document.title = name + " — ListStore";
      if (state.source) state.source.close();
      setStatus("connecting…");
      const source = new EventSource(
        path(name) + "/changes" + (after == null ? "" : "?after=" + after));
      state.source = source;
      const start = event => {
        const snapshot = JSON.parse(event.data);
        state.sections = snapshot.sections;
        state.seq = snapshot.seq;
        render(new Set());
        setStatus("live");
      };
      source.addEventListener("snapshot", start);
      source.addEventListener("reset", start);
      source.addEventListener("changes", event => {
        let changed;
        try {
          changed = apply(JSON.parse(event.data));
        } catch (_) {
          follow(name);  // The change does not fit what is shown: start from a snapshot.
          return;
        }
        state.seq = Number(event.lastEventId);
        render(changed);
        setStatus("live");
      });
      source.addEventListener("deleted", () => {
        source.close();
        showDeleted(name);
      });
      source.onopen = () => setStatus("live");
      source.onerror = () => {
        setStatus("offline: reconnecting…", true);
        // The browser tries again by itself after a lost connection, but not after an
        // answer other than 200 (a server stopping): then the page does, from state.seq.
        if (source.readyState === EventSource.CLOSED) setTimeout(() => resume(name), 1000);
      };
    }

    async function resume(name) {
      if (state.source && state.source.readyState !== EventSource.CLOSED) return;
      let response;
      try {
        response = await fetch(path(name), { credentials: "same-origin" });
      } catch (_) {
        setTimeout(() => resume(name), 1000);
        return;
      }
      if (response.status === 404) return showDeleted(name);
      if (response.status === 401 || response.status === 403) {
        setStatus("this server needs a token: open the page once with ?access_token=TOKEN", true);
        return;
      }
      if (!response.ok) {
        setTimeout(() => resume(name), 1000);
        return;
      }
      follow(name, state.seq);
    }

    function showDeleted(name) {
      main.replaceChildren(element("h1", {}, name), element("p", {}, "This list was deleted."),
        element("a", { href: "/" }, "All lists"));
      setStatus("deleted");
    }

    // Applies a changeset (docs/changesets.md) to the state; returns the ids it touched.
    function apply(changes) {
      const sections = state.sections;
      const touched = new Set();
      const removals = [];
      for (const entry of changes.deletedItems || []) removals.push({ at: entry.at });
      for (const entry of changes.movedItems || []) removals.push({ at: entry.from });
      removals.sort((a, b) => b.at[0] - a.at[0] || b.at[1] - a.at[1]);
      for (const removal of removals) sections[removal.at[0]].items.splice(removal.at[1], 1);
      const moved = new Map();
      const sectionRemovals = [];
      for (const entry of changes.deletedSections || []) sectionRemovals.push(entry.index);
      for (const entry of changes.movedSections || []) sectionRemovals.push(entry.from);
      sectionRemovals.sort((a, b) => b - a);
      for (const index of sectionRemovals) {
        const [section] = sections.splice(index, 1);
        moved.set(section.id, section);
      }
      const sectionInsertions = [];
      for (const entry of changes.insertedSections || []) {
        sectionInsertions.push({ index: entry.index, section: entry });
        touched.add("s" + entry.id);
      }
      for (const entry of changes.movedSections || []) {
        const section = Object.assign(moved.get(entry.id), titles(entry));
        sectionInsertions.push({ index: entry.to, section });
        touched.add("s" + entry.id);
      }
      sectionInsertions.sort((a, b) => a.index - b.index);
      for (const insertion of sectionInsertions) {
        const section = insertion.section;
        sections.splice(insertion.index, 0, Object.assign(
          { id: section.id, items: section.items || [] }, titles(section)));
      }
      const insertions = [];
      for (const entry of changes.insertedItems || []) insertions.push({ at: entry.at, item: entry });
      for (const entry of changes.movedItems || []) insertions.push({ at: entry.to, item: entry });
      insertions.sort((a, b) => a.at[0] - b.at[0] || a.at[1] - b.at[1]);
      for (const insertion of insertions) {
        sections[insertion.at[0]].items.splice(insertion.at[1], 0,
          { id: insertion.item.id, value: insertion.item.value });
        touched.add("i" + insertion.item.id);
      }
      for (const entry of changes.updatedSections || []) {
        Object.assign(sections.find(section => section.id === entry.id), titles(entry));
        touched.add("s" + entry.id);
      }
      for (const entry of changes.updatedItems || []) {
        for (const section of sections) {
          const item = section.items.find(item => item.id === entry.id);
          if (item) item.value = entry.value;
        }
        touched.add("i" + entry.id);
      }
      return touched;
    }
    function titles(entry) {
      const result = { header: entry.header, footer: entry.footer };
      if ("metadata" in entry) result.metadata = entry.metadata;
      return result;
    }

    // Draws the list again, keeping the focus where it was, and flashes what changed.
    function render(changed) {
      const focused = document.activeElement && document.activeElement.dataset.key;
      const editing = main.querySelector("input[data-editing]");
      if (editing && !changed.has(editing.dataset.editing)) return;
      const title = element("h1", {}, state.name);
      const nodes = state.sections.map((section, index) => renderSection(section, index, changed));
      const add = element("form", { ariaLabel: "New section" },
        element("label", { className: "sr-only", htmlFor: "new-section" }, "New section header"),
        element("input", { type: "text", id: "new-section", placeholder: "New section header",
          required: true }),
        element("button", { type: "submit" }, "Add section"));
      add.querySelector("input").dataset.key = "new-section";
      add.onsubmit = async event => {
        event.preventDefault();
        const header = add.querySelector("input").value.trim();
        if (!header) return;
        await api("POST", path(state.name) + "/sections", { header, footer: null });
        add.querySelector("input").value = "";
      };
      const empty = state.sections.length ? [] : [element("p", { className: "muted" }, "No sections yet.")];
      main.replaceChildren(title, ...nodes, ...empty, add);
      if (focused) {
        const again = main.querySelector("[data-key='" + CSS.escape(focused) + "']");
        if (again) again.focus();
      }
      document.dispatchEvent(new CustomEvent("liststore:rendered"));
    }

    function button(label, text, key, action) {
      const node = element("button", { type: "button", textContent: text });
      node.setAttribute("aria-label", label);
      node.dataset.key = key;
      node.onclick = action;
      return node;
    }

    function renderSection(section, index, changed) {
      const node = element("section", { ariaLabel: section.header || "Section " + index });
      node.dataset.id = section.id;
      if (changed.has("s" + section.id)) node.classList.add("flash");
      const heading = element("h2", {}, section.header == null ? "(no header)" : section.header);
      const rename = button("Rename section " + (section.header || index), "Rename",
        "rename-s" + section.id, () => editTitle(node, section));
      const remove = button("Delete section " + (section.header || index), "Delete",
        "delete-s" + section.id, () => api("DELETE", path(state.name) + "/sections/" + section.id));
      node.append(element("div", { className: "titles" }, heading,
        element("span", { className: "row" }, rename, remove)));
      const list = element("ol", {});
      section.items.forEach((item, row) =>
        list.append(renderItem(item, row, section, changed)));
      list.ondragover = event => event.preventDefault();
      list.ondrop = event => {
        event.preventDefault();
        const id = event.dataTransfer.getData("text/plain");
        if (event.target === list && /^\\d+$/.test(id)) move(id, { section: section.id });
      };
      node.append(list);
      if (section.footer != null) node.append(element("p", { className: "footer" }, section.footer));
      const add = element("form", {},
        element("label", { className: "sr-only", htmlFor: "add-" + section.id },
          "New item in " + (section.header || "section " + index)),
        element("input", { type: "text", id: "add-" + section.id, placeholder: "New item",
          required: true }),
        element("button", { type: "submit" }, "Add"));
      add.querySelector("input").dataset.key = "add-" + section.id;
      add.onsubmit = async event => {
        event.preventDefault();
        const input = add.querySelector("input");
        if (!input.value.trim()) return;
        await api("POST", path(state.name) + "/sections/" + section.id + "/items",
          { value: input.value });
        input.value = "";
      };
      node.append(add);
      return node;
    }

    function renderItem(item, row, section, changed) {
      const text = display(item.value);
      const node = element("li", { draggable: true });
      node.dataset.id = item.id;
      if (changed.has("i" + item.id)) node.classList.add("flash");
      const handle = element("span", { className: "handle", ariaHidden: "true" }, "⠿");
      const value = element("span", { className: "value" }, text);
      const items = section.items;
      const previous = items[row - 1];
      const next = items[row + 1];
      const up = button("Move " + text + " up", "↑", "up-" + item.id,
        () => previous && move(item.id, { before: previous.id }));
      up.disabled = !previous;
      const down = button("Move " + text + " down", "↓", "down-" + item.id,
        () => next && move(item.id, { after: next.id }));
      down.disabled = !next;
      const edit = button("Edit " + text, "Edit", "edit-" + item.id, () => editItem(node, item));
      const remove = button("Delete " + text, "Delete", "delete-" + item.id,
        () => api("DELETE", path(state.name) + "/items/" + item.id));
      node.append(handle, value, element("span", { className: "row" }, up, down, edit, remove));
      node.ondragstart = event => event.dataTransfer.setData("text/plain", String(item.id));
      node.ondragover = event => { event.preventDefault(); node.classList.add("drop"); };
      node.ondragleave = () => node.classList.remove("drop");
      node.ondrop = event => {
        event.preventDefault();
        event.stopPropagation();
        node.classList.remove("drop");
        const id = event.dataTransfer.getData("text/plain");
        if (/^\\d+$/.test(id) && Number(id) !== item.id) move(id, { before: item.id });
      };
      return node;
    }

    function move(id, place) {
      return api("PATCH", path(state.name) + "/items/" + id, place);
    }

    // An input in place of `text` inside `holder`: Enter saves (`save` gets what was
    // typed), Escape or leaving it gives up; a redraw waits while it is open (`key`).
    function editInPlace(holder, text, label, key, save) {
      const input = element("input", { type: "text", value: text });
      input.setAttribute("aria-label", label);
      input.dataset.editing = key;
      holder.replaceChildren(input);
      input.focus();
      input.select();
      const close = () => { input.removeAttribute("data-editing"); render(new Set()); };
      input.onblur = () => { if (input.dataset.editing) close(); };
      input.onkeydown = async event => {
        if (event.key === "Escape") close();
        if (event.key !== "Enter") return;
        event.preventDefault();
        input.removeAttribute("data-editing");
        try {
          await save(input.value);
        } catch (_) {
          render(new Set());  // The status line says why.
        }
      };
    }

    function editItem(node, item) {
      editInPlace(node.querySelector(".value"), display(item.value), "New value", "i" + item.id,
        async text => {
          await api("PATCH", path(state.name) + "/items/" + item.id,
            { value: parsed(text, item.value) });
          const again = main.querySelector("[data-key='edit-" + item.id + "']");
          if (again) again.focus();
        });
    }

    // A new header; metadata of another shape keeps its other fields.
    function editTitle(node, section) {
      editInPlace(node.querySelector("h2"), section.header || "", "New header", "s" + section.id,
        text => {
          let body = { header: text, footer: section.footer };
          if ("metadata" in section) {
            const old = section.metadata;
            const object = old !== null && typeof old === "object" && !Array.isArray(old);
            body = { metadata: object ? Object.assign({}, old, { header: text }) : text };
          }
          return api("PATCH", path(state.name) + "/sections/" + section.id, body);
        });
    }

    const route = location.pathname.match(/^\\/lists\\/(.+)$/);
    if (route) {
      follow(decodeURIComponent(route[1]));
    } else {
      showLists().catch(() => {});
    }
    </script>
    </body>
    </html>
    """
}
