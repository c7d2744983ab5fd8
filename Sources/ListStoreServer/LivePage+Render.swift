// The live page drawing one list: sections, items, their buttons and in-place editing.
extension LivePage {
  /// Draws the list from the state, and the actions of its buttons and forms.
  static let render = #"""
    // Draws the list again, keeping the focus where it was, and flashes what changed —
    // unless the page no longer shows the list (deleted, missing, no token).
    function render(changed) {
      if (state.ended) return;
      // The focused control, or the one an in-place field gives the focus back to.
      const active = document.activeElement;
      const focused = active && (active.dataset.key || active.dataset.back);
      const editing = main.querySelector("input[data-editing]");
      if (editing && !changed.has(editing.dataset.editing)) return;
      const title = renderTitle();
      const nodes = state.sections.map((section, index) => renderSection(section, index, changed));
      const empty = state.sections.length ? [] : [element("p", { className: "muted" }, "No sections yet.")];
      main.replaceChildren(title, ...nodes, ...empty, ...(canWrite() ? [newSectionForm()] : []));
      if (focused) {
        const again = main.querySelector("[data-key='" + CSS.escape(focused) + "']");
        if (again) again.focus();
      }
      document.dispatchEvent(new CustomEvent("liststore:rendered"));
    }

    // The list's name, with Rename and Delete where the credentials may write.
    function renderTitle() {
      const heading = element("h1", {}, state.name);
      if (!canWrite()) return heading;
      const bar = element("div", { className: "titles list-titles" }, heading);
      const rename = button("Rename list " + state.name, "Rename", "rename-list",
        () => renameList(bar));
      const remove = button("Delete list " + state.name, "Delete list", "delete-list", deleteList);
      bar.append(element("span", { className: "row" }, rename, remove));
      return bar;
    }

    // A new name, in place; the page then follows the list under it: its address (with
    // no new entry in the history) and its change stream.
    function renameList(bar) {
      const old = state.name;
      editInPlace(bar.querySelector("h1"), old, "New list name", "list", "rename-list",
        async text => {
          const name = text.trim();
          if (!name || name === old) return render(new Set());
          state.renaming = true;
          try {
            await api("PATCH", path(old), { name });
          } finally {
            state.renaming = false;
          }
          history.replaceState(null, "", "/lists/" + segment(name));
          follow(name);
        });
    }

    // Asks first, naming the list and all it holds.
    async function deleteList() {
      const name = state.name;
      const items = state.sections.reduce((sum, section) => sum + section.items.length, 0);
      const question = "Delete list " + quoted(name) + ": "
        + counted(state.sections.length, "section") + ", " + counted(items, "item")
        + "? This cannot be undone.";
      if (!(await confirmDelete(question))) return;
      await api("DELETE", path(name));
      if (state.name === name) showDeleted(name);
    }

    function newSectionForm() {
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
      return add;
    }

    function button(label, text, key, action) {
      const node = element("button", { type: "button", textContent: text });
      node.setAttribute("aria-label", label);
      node.dataset.key = key;
      // A failed request says why in the status line.
      node.onclick = () => Promise.resolve(action()).catch(() => {});
      return node;
    }

    // What a drag carries: an item's id or a section's, each under a type of its own, so
    // that each drop takes only its own kind.
    const ITEM = "application/x-liststore-item";
    const SECTION = "application/x-liststore-section";
    function carries(event, type) { return event.dataTransfer.types.includes(type); }

    function renderSection(section, index, changed) {
      const label = section.header || "Section " + index;
      const node = element("section", { ariaLabel: label });
      node.dataset.id = section.id;
      if (changed.has("s" + section.id)) node.classList.add("flash");
      const heading = element("h2", {}, section.header == null ? "(no header)" : section.header);
      const list = element("ol", {});
      section.items.forEach((item, row) =>
        list.append(renderItem(item, row, section, changed)));
      const footer = section.footer == null ? []
        : [element("p", { className: "footer" }, section.footer)];
      if (!canWrite()) {
        node.append(element("div", { className: "titles" }, heading), list, ...footer);
        return node;
      }
      const previous = state.sections[index - 1];
      const next = state.sections[index + 1];
      const up = button("Move section " + label + " up", "↑", "sup-" + section.id,
        () => previous && moveSection(section.id, { before: previous.id }));
      up.disabled = !previous;
      const down = button("Move section " + label + " down", "↓", "sdown-" + section.id,
        () => next && moveSection(section.id, { after: next.id }));
      down.disabled = !next;
      const rename = button("Rename section " + label, "Rename", "rename-s" + section.id,
        () => editTitle(node, section));
      const footing = button("Edit the footer of section " + label, "Footer",
        "footer-s" + section.id, () => editFooter(node, section));
      const remove = button("Delete section " + label, "Delete", "delete-s" + section.id,
        () => deleteSection(section, index));
      // The title bar is the section's drag handle.
      const bar = element("div", { className: "titles", draggable: true },
        element("span", { className: "handle", ariaHidden: "true" }, "⠿"), heading,
        element("span", { className: "row" }, up, down, rename, footing, remove));
      bar.ondragstart = event => {
        event.dataTransfer.setData(SECTION, String(section.id));
        event.dataTransfer.effectAllowed = "move";
      };
      node.ondragover = event => {
        if (!carries(event, SECTION)) return;
        event.preventDefault();
        node.classList.add("drop");
      };
      node.ondragleave = event => {
        if (!node.contains(event.relatedTarget)) node.classList.remove("drop");
      };
      node.ondrop = event => {
        if (!carries(event, SECTION)) return;
        event.preventDefault();
        node.classList.remove("drop");
        const id = Number(event.dataTransfer.getData(SECTION));
        const from = state.sections.findIndex(other => other.id === id);
        const to = state.sections.findIndex(other => other.id === section.id);
        if (from < 0 || to < 0 || from === to) return;
        // It takes the place of the section it is dropped on.
        moveSection(id, from < to ? { after: section.id } : { before: section.id })
          .catch(() => {});
      };
      list.ondragover = event => { if (carries(event, ITEM)) event.preventDefault(); };
      list.ondrop = event => {
        if (!carries(event, ITEM)) return;
        event.preventDefault();
        const id = event.dataTransfer.getData(ITEM);
        if (event.target === list && /^\d+$/.test(id))
          move(id, { section: section.id }).catch(() => {});
      };
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
      node.append(bar, list, ...footer, add);
      return node;
    }

    function renderItem(item, row, section, changed) {
      const text = display(item.value);
      const node = element("li", {});
      node.dataset.id = item.id;
      if (changed.has("i" + item.id)) node.classList.add("flash");
      const value = element("span", { className: "value" }, text);
      if (!canWrite()) {
        node.append(value);
        return node;
      }
      node.draggable = true;
      const handle = element("span", { className: "handle", ariaHidden: "true" }, "⠿");
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
      const remove = button("Delete " + text, "Delete", "delete-" + item.id, async () => {
        if (await confirmDelete("Delete " + quoted(text) + "? This cannot be undone."))
          await api("DELETE", path(state.name) + "/items/" + item.id);
      });
      node.append(handle, value, element("span", { className: "row" }, up, down, edit, remove));
      node.ondragstart = event => {
        event.dataTransfer.setData(ITEM, String(item.id));
        event.dataTransfer.effectAllowed = "move";
      };
      node.ondragover = event => {
        if (!carries(event, ITEM)) return;
        event.preventDefault();
        node.classList.add("drop");
      };
      node.ondragleave = () => node.classList.remove("drop");
      node.ondrop = event => {
        if (!carries(event, ITEM)) return;
        event.preventDefault();
        event.stopPropagation();
        node.classList.remove("drop");
        const id = event.dataTransfer.getData(ITEM);
        if (/^\d+$/.test(id) && Number(id) !== item.id)
          move(id, { before: item.id }).catch(() => {});
      };
      return node;
    }

    // Asks first, naming the section and how many items go with it.
    async function deleteSection(section, index) {
      const name = section.header == null ? "section " + (index + 1) + " (no header)"
        : "section " + quoted(section.header);
      const items = section.items.length;
      const question = "Delete " + name + (items ? " and its " + counted(items, "item") : "")
        + "? This cannot be undone.";
      if (await confirmDelete(question))
        await api("DELETE", path(state.name) + "/sections/" + section.id);
    }

    function move(id, place) {
      return api("PATCH", path(state.name) + "/items/" + id, place);
    }

    function moveSection(id, place) {
      return api("PATCH", path(state.name) + "/sections/" + id, place);
    }

    // An input in place of `text` inside `holder`: Enter saves (`save` gets what was
    // typed), Escape gives up, both giving the focus back to the control `back`; leaving
    // it gives up too. A redraw waits while it is open (`key`).
    function editInPlace(holder, text, label, key, back, save) {
      const input = element("input", { type: "text", value: text });
      input.setAttribute("aria-label", label);
      input.dataset.editing = key;
      input.dataset.back = back;
      holder.replaceChildren(input);
      input.focus();
      input.select();
      const close = () => { input.removeAttribute("data-editing"); render(new Set()); };
      const giveBack = () => {
        const again = main.querySelector("[data-key='" + CSS.escape(back) + "']");
        if (again) again.focus();
      };
      input.onblur = () => { if (input.dataset.editing) close(); };
      input.onkeydown = async event => {
        if (event.key === "Escape") {
          close();
          giveBack();
          return;
        }
        if (event.key !== "Enter") return;
        event.preventDefault();
        input.removeAttribute("data-editing");
        try {
          await save(input.value);
        } catch (_) {
          render(new Set());  // The status line says why.
        }
        // Unless the user went on to another control meanwhile (the change may be drawn
        // before the answer comes): the focus is theirs then.
        const now = document.activeElement;
        if (!now || now === document.body || now === input) giveBack();
      };
    }

    function editItem(node, item) {
      editInPlace(node.querySelector(".value"), display(item.value), "New value", "i" + item.id,
        "edit-" + item.id,
        text => api("PATCH", path(state.name) + "/items/" + item.id,
          { value: parsed(text, item.value) }));
    }

    function sectionPath(section) { return path(state.name) + "/sections/" + section.id; }

    // The body that sets a section's header or footer (`change`). Metadata of another
    // shape keeps its other fields; a bare header stays bare, or becomes an object's
    // header when a footer joins it. A footer of null removes it.
    function titlesBody(section, change) {
      if (!("metadata" in section))
        return Object.assign({ header: section.header, footer: section.footer }, change);
      const old = section.metadata;
      const object = old !== null && typeof old === "object" && !Array.isArray(old);
      if (!object && "header" in change) return { metadata: change.header };
      const metadata = Object.assign({}, object ? old : { header: section.header }, change);
      if (metadata.footer == null) delete metadata.footer;
      return { metadata };
    }

    function editTitle(node, section) {
      editInPlace(node.querySelector("h2"), section.header || "", "New header", "s" + section.id,
        "rename-s" + section.id,
        text => api("PATCH", sectionPath(section), titlesBody(section, { header: text })));
    }

    // A new footer, in place (where there was none, below the items); an empty one
    // removes it.
    function editFooter(node, section) {
      let holder = node.querySelector(".footer");
      if (!holder) {
        holder = element("p", { className: "footer" });
        node.querySelector("ol").after(holder);
      }
      editInPlace(holder, section.footer || "", "New footer (empty removes it)",
        "s" + section.id, "footer-s" + section.id,
        text => api("PATCH", sectionPath(section),
          titlesBody(section, { footer: text.trim() ? text : null })));
    }
    """#
}
