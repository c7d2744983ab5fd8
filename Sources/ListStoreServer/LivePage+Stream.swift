// The live page following one list: its change stream, resumption, and changesets
// applied to what it shows.
extension LivePage {
  /// Follows a list's change stream and applies its changesets to the page's state.
  static let stream = #"""
    // MARK: One list, live

    // Follows the list's change stream: from a snapshot, or after `after` (a resumption).
    function follow(name, after) {
      state.name = name;
      state.ended = false;
      document.title = name + " — ListStore";
      if (state.source) state.source.close();
      setStatus("connecting…");
      const source = new EventSource(
        path(name) + "/changes" + (after == null ? "" : "?after=" + after));
      state.source = source;
      // Only the latest stream speaks: one replaced (a rename, a new start) is ignored.
      const current = () => state.source === source;
      const begin = event => {
        if (!current()) return;
        const snapshot = JSON.parse(event.data);
        state.sections = snapshot.sections;
        state.seq = snapshot.seq;
        state.seen = true;
        render(new Set());
        setStatus("live");
      };
      source.addEventListener("snapshot", begin);
      source.addEventListener("reset", begin);
      source.addEventListener("changes", event => {
        if (!current()) return;
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
        // A rename ends the old name's stream as a deletion does.
        if (current() && !state.renaming) showDeleted(name);
      });
      source.onopen = () => { if (current()) setStatus("live"); };
      source.onerror = () => {
        if (!current()) return;
        setStatus("offline: reconnecting…", true);
        // The page reconnects by itself, from state.seq, rather than leave it to the
        // browser: the browser does not after an answer other than 200 (a server
        // stopping, a list that is not there), and Chromium was seen to wait forever on a
        // reconnection to a restarted server. At once the first time, to tell a list that
        // never existed without delay.
        source.close();  // A closed source fires nothing more.
        setTimeout(() => resume(name), state.seen || state.retried ? 1000 : 0);
        state.retried = true;
      };
      // A connection that neither opens nor fails within 5 s is given up the same way.
      setTimeout(() => {
        if (current() && source.readyState === EventSource.CONNECTING) source.onerror();
      }, 5000);
    }

    async function resume(name) {
      if (name !== state.name || state.renaming) return;
      if (state.source && state.source.readyState !== EventSource.CLOSED) return;
      let response;
      try {
        // Its head says whether the list is there, without its rows. A question that
        // gets no answer within 5 s is asked again (Chromium was seen to wait forever on a
        // request made while the server restarted).
        response = await fetch(path(name),
          { method: "HEAD", credentials: "same-origin", signal: AbortSignal.timeout(5000) });
      } catch (_) {
        setTimeout(() => resume(name), 1000);
        return;
      }
      if (response.status === 404) return state.seen ? showDeleted(name) : showMissing(name);
      if (response.status === 401) return showSignIn();
      if (!response.ok) {
        setTimeout(() => resume(name), 1000);
        return;
      }
      follow(name, state.seen ? state.seq : undefined);
    }

    function showDeleted(name) {
      if (state.source) state.source.close();
      state.ended = true;
      main.replaceChildren(element("h1", {}, name), element("p", {}, "This list was deleted."),
        element("a", { href: "/" }, "All lists"));
      setStatus("deleted");
    }

    // The page of a list that is not there, and never was while the page showed it.
    function showMissing(name) {
      if (state.source) state.source.close();
      state.ended = true;
      document.title = "No such list — ListStore";
      main.replaceChildren(element("h1", {}, "No such list"),
        element("p", {}, "There is no list named " + quoted(name) + " on this server."),
        element("a", { href: "/" }, "All lists"));
      setStatus("no such list");
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
    """#
}
