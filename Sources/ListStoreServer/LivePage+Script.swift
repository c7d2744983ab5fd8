// The live page's script: its state, its requests, the question before a delete, the
// lists page and the start.
extension LivePage {
  /// The state, the helpers that make elements and send requests.
  static let core = #"""
    const main = document.getElementById("main");
    const statusLine = document.getElementById("status");
    // `permissions` is the server's answer to GET /v1/permissions as it is: what the
    // page's credentials may do ("read", "write", and what later scopes add).
    // `seen`: a snapshot of the list came (else a 404 means it never existed); `retried`:
    // the stream was opened again after a failure; `renaming` is set while the page
    // renames its list; `ended`: the page no longer shows the list (deleted, missing, no
    // token), and draws it no more.
    const state = { name: null, sections: [], seq: 0, source: null, permissions: {},
      seen: false, retried: false, renaming: false, ended: false };
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
    function segment(name) { return encodeURIComponent(name).replace(/\./g, "%2E"); }
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
        const error = new Error(message);
        error.shown = true;
        throw error;
      }
      return response.status === 204 ? null : response.json();
    }
    // A failed request that a form or a button made ends its handler: the page has shown
    // why, so the browser need not report it again.
    window.addEventListener("unhandledrejection", event => {
      if (event.reason && event.reason.shown) event.preventDefault();
    });
    // A stored value as people read it: a string as it is, anything else as JSON.
    function display(value) { return typeof value === "string" ? value : JSON.stringify(value); }
    function parsed(text, before) {
      if (typeof before === "string") return text;
      try { return JSON.parse(text); } catch (_) { return text; }
    }
    // Whether the credentials may change the list shown (or, on the lists page, make
    // lists): else the page draws no control that would. `writeLists` is "*" or the
    // names a token limited to some lists may write.
    function canWrite(name) {
      const lists = state.permissions.writeLists;
      if (state.permissions.write !== true) return false;
      const list = name === undefined ? state.name : name;
      return lists === undefined || lists === "*" || list == null || lists.includes(list);
    }
    // A number of things, singular for one: "1 item", "2 items".
    function counted(number, noun) { return number + " " + noun + (number === 1 ? "" : "s"); }
    """#

  /// The question asked before anything is deleted: a modal dialog of the page.
  static let confirmation = #"""
    // MARK: Confirmation

    // A text in a question: in quotes, cut short past 80 characters.
    function quoted(text) {
      const characters = [...text];
      return "\"" + (characters.length > 80 ? characters.slice(0, 79).join("") + "…" : text)
        + "\"";
    }

    // Asks `question` in a modal <dialog> of the page (not window.confirm): Cancel has the
    // focus, Escape cancels, and only Delete says yes. Resolves to whether it was Delete;
    // the focus then goes back to the control that asked (by its key, as it may have been
    // redrawn meanwhile).
    function confirmDelete(question) {
      let dialog = document.getElementById("confirm");
      if (!dialog) {
        const cancel = element("button", { type: "button", textContent: "Cancel" });
        cancel.dataset.key = "confirm-cancel";
        cancel.onclick = () => dialog.close("cancel");
        const remove = element("button", { type: "button", className: "danger",
          textContent: "Delete" });
        remove.dataset.key = "confirm-delete";
        remove.onclick = () => dialog.close("delete");
        dialog = element("dialog", { id: "confirm" }, element("p", { id: "confirm-question" }),
          element("div", { className: "actions" }, cancel, remove));
        dialog.setAttribute("aria-labelledby", "confirm-question");
        document.body.append(dialog);
      }
      if (dialog.open) return Promise.resolve(false);
      const asker = document.activeElement && document.activeElement.dataset.key;
      dialog.querySelector("p").textContent = question;
      dialog.returnValue = "";
      return new Promise(resolve => {
        dialog.addEventListener("close", () => {
          const again = asker && main.querySelector("[data-key='" + CSS.escape(asker) + "']");
          if (again) again.focus();
          resolve(dialog.returnValue === "delete");
        }, { once: true });
        dialog.showModal();
        dialog.querySelector("[data-key='confirm-cancel']").focus();
      });
    }
    """#

  /// `/`: the lists, and a form to make one.
  static let listsPage = #"""
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
          list.name + " — " + counted(list.sections, "section") + ", "
            + counted(list.items, "item"))))
          : element("p", { className: "muted" }, "No lists yet."), ...(canWrite() ? [form] : []));
      setStatus(counted(lists.length, "list"));
    }
    """#

  /// What the page shows first: what its credentials may do (once), then the lists, or one
  /// list by the address.
  static let startup = #"""
    // MARK: The start

    // Without a token the server knows: how to give one, in this page's own address.
    function showSignIn() {
      if (state.source) state.source.close();
      state.ended = true;
      document.title = "Token needed — ListStore";
      main.replaceChildren(element("h1", {}, "Token needed"),
        element("p", {}, "This server needs a token: open this page once as ",
          element("code", {}, location.pathname + "?access_token=TOKEN"),
          ", with TOKEN a token of the server's tokens file (the one liststore serve --tokens"
            + " FILE reads). The page keeps it in a cookie: once is enough."));
      setStatus("needs a token", true);
    }

    async function start() {
      let response;
      try {
        response = await fetch("/v1/permissions", { credentials: "same-origin" });
      } catch (_) {
        setStatus("offline: reconnecting…", true);
        setTimeout(start, 1000);
        return;
      }
      if (response.status === 401) return showSignIn();
      if (!response.ok) {
        let message = response.status + " " + response.statusText;
        try { message = (await response.json()).error || message; } catch (_) {}
        setStatus(message + ": trying again…", true);
        setTimeout(start, 1000);
        return;
      }
      state.permissions = await response.json();
      const route = location.pathname.match(/^\/lists\/(.+)$/);
      if (route) {
        follow(decodeURIComponent(route[1]));
      } else {
        showLists().catch(() => {});
      }
    }
    start();
    """#
}
