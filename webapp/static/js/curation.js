/* Curation page: keyboard-first mention review. No framework; htmx does the requests and swaps.
 *
 * The page (templates/curation/document.html) holds the document text (#document-text, mentions as <mark>
 * with data-mention-id; every text segment carries data-start, its character offset) and the candidate
 * panel (#panel, an htmx fragment per mention). This script keeps track of the selected mention, maps
 * keys to the panel's buttons, measures time on task, and turns a text selection into character offsets.
 */
(function () {
  "use strict";

  const root = document.getElementById("curation");
  if (!root) return;
  const panel = document.getElementById("panel");
  const toastBox = document.getElementById("toast");
  const help = document.getElementById("help");
  const scope = document.getElementById("scope");
  const autoAdvance = document.getElementById("auto-advance");
  const selectionBar = document.getElementById("selection-bar");
  const OPEN = new Set(["pending", "suggested"]);

  let current = null; // selected mention id (string)
  let shownAt = performance.now();
  let busy = false;
  let pendingSelection = null; // {start, end, text}
  let revealOnSwap = null; // a decision's answer is the next mention's panel: show that mention once it is in

  // --- preferences -----------------------------------------------------------------------------------
  try {
    const savedScope = localStorage.getItem("curation.scope");
    if (savedScope && scope.querySelector(`option[value="${savedScope}"]`)) scope.value = savedScope;
    const savedAdvance = localStorage.getItem("curation.advance");
    if (savedAdvance !== null) autoAdvance.checked = savedAdvance === "1";
  } catch (e) { /* storage may be disabled: defaults apply */ }
  scope.addEventListener("change", () => { try { localStorage.setItem("curation.scope", scope.value); } catch (e) {} });
  autoAdvance.addEventListener("change", () => { try { localStorage.setItem("curation.advance", autoAdvance.checked ? "1" : "0"); } catch (e) {} });

  // --- mentions ------------------------------------------------------------------------------------------
  function starts() {
    // The first segment of each mention has id="mention-<pk>"; DOM order is text order.
    return Array.from(document.querySelectorAll('#document-text mark[id^="mention-"]'));
  }
  function ids() { return starts().map((m) => m.dataset.mentionId); }
  function statusOf(id) {
    const mark = document.getElementById("mention-" + id);
    return mark ? mark.dataset.status : null;
  }

  function highlight() {
    document.querySelectorAll("#document-text mark.selected").forEach((m) => m.classList.remove("selected"));
    // Keyboard focus left on a mention the curator has moved away from (auto-advance, undo) would draw a
    // second ring beside the selection: only the current mention keeps it.
    const focused = document.activeElement;
    if (focused && focused.matches && focused.matches("#document-text mark")
        && !(focused.dataset.mentionIds || "").split(" ").includes(current || "")) focused.blur();
    if (!current) return;
    document.querySelectorAll(`#document-text mark[data-mention-ids~="${current}"]`).forEach((m) => m.classList.add("selected"));
  }

  function recolour(id, status) {
    // The panel may have changed the mention's status (suggestions stored): follow it in the text and counts.
    const marks = document.querySelectorAll(`#document-text mark[data-mention-id="${id}"]`);
    if (!marks.length || !status || marks[0].dataset.status === status) return;
    const old = marks[0].dataset.status;
    marks.forEach((m) => { m.classList.replace("status-" + old, "status-" + status); m.dataset.status = status; });
    const from = document.querySelector(`[data-status-count="${old}"]`);
    const to = document.querySelector(`[data-status-count="${status}"]`);
    if (from && to) { from.textContent = String(Number(from.textContent) - 1); to.textContent = String(Number(to.textContent) + 1); }
  }

  function reveal(id, opts) {
    // The selected mention highlighted, scrolled to (focused when asked) and named in the address.
    current = String(id);
    highlight();
    const mark = document.getElementById("mention-" + current);
    if (mark) {
      mark.scrollIntoView({ block: "nearest", behavior: "smooth" });
      if (opts && opts.focus) mark.focus({ preventScroll: true });
    }
    const url = new URL(window.location.href);
    url.searchParams.set("m", current);
    history.replaceState(null, "", url);
  }

  function select(id, opts) {
    if (!id) return;
    reveal(id, opts);
    htmx.ajax("GET", root.dataset.panelUrl.replace("/0/", "/" + current + "/"), { target: "#panel", swap: "innerHTML" });
  }

  function step(delta) {
    const list = ids();
    if (!list.length) return;
    const at = list.indexOf(current);
    const next = at < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, at + delta));
    select(list[next], { focus: true });
  }

  function nextOpen() {
    const list = ids();
    const at = Math.max(-1, list.indexOf(current));
    for (let i = 1; i <= list.length; i++) {
      const id = list[(at + i) % list.length];
      if (OPEN.has(statusOf(id)) && id !== current) return id;
    }
    return null;
  }

  function advance() {
    const id = nextOpen();
    if (id) { select(id, { focus: true }); return; }
    // A long document is shown a part at a time: its next part comes before the queue's next document.
    if (root.dataset.nextPartUrl) { window.location.href = root.dataset.nextPartUrl; return; }
    if (root.dataset.queueMode === "1") { window.location.href = root.dataset.queueUrl; return; }
    toast("Every mention of this document has a decision. Shift+Q opens the next mention in the review queue.");
  }

  // --- toasts --------------------------------------------------------------------------------------------
  let toastTimer = null;
  function toast(message, isError) {
    toastBox.textContent = message;
    toastBox.classList.toggle("toast-error", !!isError);
    toastBox.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { toastBox.hidden = true; }, isError ? 6000 : 3500);
  }

  // --- htmx wiring ---------------------------------------------------------------------------------------
  document.body.addEventListener("htmx:configRequest", (evt) => {
    const path = evt.detail.path || "";
    if (/\/(decide|span)\/$/.test(path)) {
      evt.detail.parameters.time_on_task_ms = String(Math.round(performance.now() - shownAt));
    }
    // With auto-advance the decision's answer is the next open mention's panel: one request per decision, not a
    // POST and then a panel GET (bench/curator_speed.py). The server says so ("shown"), or answers as before.
    if (/\/decide\/$/.test(path) && autoAdvance.checked) {
      const next = nextOpen();
      if (next) evt.detail.parameters.next = next;
    }
  });
  document.body.addEventListener("htmx:beforeRequest", (evt) => {
    if (evt.detail.requestConfig && evt.detail.requestConfig.verb === "post") busy = true;
  });
  document.body.addEventListener("htmx:afterRequest", () => { busy = false; });
  document.body.addEventListener("htmx:beforeSwap", (evt) => {
    // The panel of a mention the curator has moved away from (a slow load overtaken by an undo or another
    // selection) must not replace the panel they are looking at.
    const config = evt.detail.requestConfig;
    const loaded = config && config.verb === "get" && /\/mentions\/(\d+)\/panel\/$/.exec(config.path || "");
    if (loaded && evt.detail.target === panel && current && loaded[1] !== current) {
      evt.detail.shouldSwap = false;
      return;
    }
    // A conflict (409) or a refused decision (400) answers with the panel and its message: show it.
    const status = evt.detail.xhr.status;
    if ((status === 409 || status === 400) && evt.detail.target === panel) {
      evt.detail.shouldSwap = true;
      evt.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterSwap", (evt) => {
    // Search hits too: Enter on the first hit right after they appear must link it, not wait for the settle.
    if (evt.detail.target.id === "search-results") htmx.process(evt.detail.target);
    if (evt.detail.target === panel) {
      // htmx wires the new panel's buttons and search box only when it settles (~20 ms later); a curator's
      // next key often comes sooner. Wiring now is idempotent.
      htmx.process(panel);
      const body = panel.querySelector(".panel-body");
      const id = body && body.dataset.mentionId;
      if (id && id !== current) { current = id; }
      if (id) recolour(id, body.dataset.status);
      if (id && id === revealOnSwap) { revealOnSwap = null; reveal(id, { focus: true }); }
      shownAt = performance.now();
    }
  });
  document.body.addEventListener("htmx:afterSettle", highlight);
  document.body.addEventListener("htmx:oobAfterSwap", highlight);
  document.body.addEventListener("htmx:responseError", (evt) => {
    toast("The server answered " + evt.detail.xhr.status + ": " + (evt.detail.xhr.responseText || "").slice(0, 200), true);
  });
  document.body.addEventListener("htmx:sendError", () => toast("The server cannot be reached: nothing was saved.", true));

  document.body.addEventListener("curation:decided", (evt) => {
    const detail = evt.detail || {};
    if (detail.message) toast(detail.message);
    if (detail.shown) {
      // The answer is the next mention's panel (this event comes before htmx swaps it in; reveal at once if not).
      const body = panel.querySelector(".panel-body");
      if (body && body.dataset.mentionId === String(detail.shown)) reveal(detail.shown, { focus: true });
      else revealOnSwap = String(detail.shown);
      return;
    }
    if (autoAdvance.checked && detail.advance !== false) setTimeout(advance, 0);
  });
  document.body.addEventListener("curation:undone", (evt) => {
    // The message is the panel's own status line (announced by its role="status"): no toast repeating it.
    const detail = evt.detail || {};
    if (detail.mention) { current = String(detail.mention); highlight(); }
    else current = null;
  });
  document.body.addEventListener("curation:added", (evt) => {
    const detail = evt.detail || {};
    if (detail.message) toast(detail.message);
    if (detail.mention) { current = String(detail.mention); setTimeout(highlight, 0); }
    hideSelectionBar();
  });
  document.body.addEventListener("curation:toast", (evt) => toast(evt.detail.message, evt.detail.error));
  document.body.addEventListener("curation:detected", (evt) => {
    // The detector's mentions were swapped into the text: select the first open one, as on opening the page.
    const detail = evt.detail || {};
    if (detail.message) toast(detail.message, detail.state === "failed");
    setTimeout(() => {
      const found = ids();
      if (!current || !found.includes(current)) {
        const first = found.find((id) => OPEN.has(statusOf(id))) || found[0];
        if (first) select(first);
      }
    }, 0);
  });

  // --- mouse ---------------------------------------------------------------------------------------------
  document.addEventListener("click", (evt) => {
    const mark = evt.target.closest && evt.target.closest("#document-text mark[data-mention-id]");
    if (mark && window.getSelection().isCollapsed) select(mark.dataset.mentionId);
  });

  // --- text selection -> character offsets -----------------------------------------------------------------
  function pointOffset(node, offset) {
    // A text node inside a segment element (<span>/<mark> with data-start): that start plus the offset.
    if (node.nodeType === Node.TEXT_NODE) {
      const seg = node.parentElement.closest("[data-start]");
      return seg ? Number(seg.dataset.start) + offset : null;
    }
    if (node.dataset && node.dataset.start !== undefined) {
      return Number(node.dataset.start) + (offset > 0 ? node.textContent.length : 0);
    }
    // A block: the boundary lies between its children.
    const child = node.childNodes[offset];
    if (child && child.dataset && child.dataset.start !== undefined) return Number(child.dataset.start);
    const before = node.childNodes[offset - 1];
    if (before && before.dataset && before.dataset.start !== undefined) return Number(before.dataset.start) + before.textContent.length;
    return null;
  }

  function readSelection() {
    const sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return null;
    const range = sel.getRangeAt(0);
    const text = document.getElementById("document-text");
    if (!text.contains(range.startContainer) || !text.contains(range.endContainer)) return null;
    const start = pointOffset(range.startContainer, range.startOffset);
    const end = pointOffset(range.endContainer, range.endOffset);
    if (start === null || end === null || end <= start) return null;
    return { start, end, text: sel.toString() };
  }

  function hideSelectionBar() { selectionBar.hidden = true; pendingSelection = null; }

  document.addEventListener("mouseup", (evt) => {
    if (selectionBar.contains(evt.target)) return;
    setTimeout(() => {
      const found = readSelection();
      if (!found || !found.text.trim()) { hideSelectionBar(); return; }
      pendingSelection = found;
      document.getElementById("selection-text").textContent = "“" + found.text.trim().slice(0, 60) + "”";
      const rect = window.getSelection().getRangeAt(0).getBoundingClientRect();
      selectionBar.hidden = false;
      selectionBar.style.top = window.scrollY + rect.bottom + 8 + "px";
      selectionBar.style.left = Math.max(8, window.scrollX + rect.left) + "px";
      document.getElementById("fix-span").disabled = !current;
    }, 0);
  });

  function addMention() {
    const found = pendingSelection || readSelection();
    if (!found) { toast("Select some text of the document first."); return; }
    htmx.ajax("POST", root.dataset.addUrl, {
      source: panel, target: "#panel", swap: "innerHTML",
      values: { start: found.start, end: found.end, mention_type: document.getElementById("new-mention-type").value },
    });
    window.getSelection().removeAllRanges();
    hideSelectionBar();
  }

  function fixSpan() {
    const found = pendingSelection || readSelection();
    const body = panel.querySelector(".panel-body");
    if (!found || !current || !body) { toast("Select a mention, then select the text that should be its span."); return; }
    htmx.ajax("POST", root.dataset.spanUrl.replace("/0/", "/" + current + "/"), {
      source: panel, target: "#panel", swap: "innerHTML",
      values: { start: found.start, end: found.end, seen: body.dataset.seen },
    });
    window.getSelection().removeAllRanges();
    hideSelectionBar();
  }
  document.getElementById("add-mention").addEventListener("click", addMention);
  document.getElementById("fix-span").addEventListener("click", fixSpan);

  // --- keyboard ------------------------------------------------------------------------------------------
  function clickIn(selector) {
    const el = panel.querySelector(selector);
    if (!el || el.disabled) return false;
    htmx.process(el); // in case the panel was swapped in by something other than htmx's own swap
    el.click();
    return true;
  }

  // "Decide without teaching": the panel says what the next decision teaches; the box rides along with every
  // decision (hx-include "#no-teach") and starts unticked on each mention's panel.
  function showTeaching() {
    const box = panel.querySelector("#no-teach");
    if (!box) return;
    panel.querySelector("#teach-on").hidden = box.checked;
    panel.querySelector("#teach-off").hidden = !box.checked;
  }
  function toggleTeaching() {
    const box = panel.querySelector("#no-teach");
    if (!box) { toast("Open a mention first."); return; }
    box.checked = !box.checked;
    showTeaching();
    toast(box.checked ? "The next decision on this mention teaches nothing." : "The next decision teaches as the panel says.");
  }
  panel.addEventListener("change", (evt) => { if (evt.target.id === "no-teach") showTeaching(); });

  function openHelp() { if (!help.open) help.showModal(); }
  document.getElementById("help-button").addEventListener("click", openHelp);

  function searchKeys(evt) {
    const input = evt.target;
    const hits = Array.from(panel.querySelectorAll("#search-results .search-hit"));
    if (evt.key === "Escape") { input.blur(); evt.preventDefault(); return; }
    if (evt.key === "ArrowDown" && hits.length) { hits[0].focus(); evt.preventDefault(); }
    if (evt.key === "Enter" && hits.length) { hits[0].click(); evt.preventDefault(); }
  }

  function hitKeys(evt) {
    const hits = Array.from(panel.querySelectorAll("#search-results .search-hit"));
    const at = hits.indexOf(evt.target);
    if (evt.key === "ArrowDown" && at < hits.length - 1) { hits[at + 1].focus(); evt.preventDefault(); }
    else if (evt.key === "ArrowUp") { (at > 0 ? hits[at - 1] : panel.querySelector("#concept-search")).focus(); evt.preventDefault(); }
    else if (evt.key === "Escape") { panel.querySelector("#concept-search").focus(); evt.preventDefault(); }
  }

  document.addEventListener("keydown", (evt) => {
    if (evt.ctrlKey || evt.metaKey || evt.altKey) return;
    const target = evt.target;
    if (target.id === "concept-search") { searchKeys(evt); return; }
    if (target.classList && target.classList.contains("search-hit")) { hitKeys(evt); return; }
    if (help.open) return; // the dialog handles Esc itself
    if (target.matches && target.matches("input:not([type=checkbox]):not([type=radio]), textarea, select, [contenteditable]")) return;
    if (target.matches && target.matches("button, a") && (evt.key === "Enter" || evt.key === " ")) return;

    const key = evt.key;
    if (key === "Enter" && target.matches && target.matches("mark[data-mention-id]") && target.dataset.mentionId !== current) {
      select(target.dataset.mentionId, { focus: true }); evt.preventDefault(); return;
    }
    const decisionKey = /^[1-9]$/.test(key) || ["a", "Enter", "n", "x", "p", "u"].includes(key);
    if (decisionKey && busy) { evt.preventDefault(); return; }
    let handled = true;
    switch (key) {
      case "j": case "ArrowDown": step(1); break;
      case "k": case "ArrowUp": step(-1); break;
      case "J": { const id = nextOpen(); if (id) select(id, { focus: true }); else toast("No open mention left in this document."); break; }
      case "a": case "Enter": if (!clickIn('[data-action="accept"]')) toast("No candidate to accept: pick one, search (/), or mark NIL (n)."); break;
      case "n": clickIn('[data-action="nil"]'); break;
      case "x": clickIn('[data-action="reject"]'); break;
      case "p": if (!clickIn('[data-action="parent"]')) toast("The top candidate has no parent to link."); break;
      case "t": toggleTeaching(); break;
      case "/": { const box = panel.querySelector("#concept-search"); if (box) { box.focus(); box.select(); } break; }
      case "u": htmx.ajax("POST", root.dataset.undoUrl, { source: panel, target: "#panel", swap: "innerHTML" }); break;
      case "m": addMention(); break;
      case "e": fixSpan(); break;
      case "s": { scope.selectedIndex = (scope.selectedIndex + 1) % scope.options.length; scope.dispatchEvent(new Event("change")); toast("Decisions apply to: " + scope.options[scope.selectedIndex].text); break; }
      case "?": openHelp(); break;
      case "Q": window.location.href = root.dataset.queueUrl; break;
      case "[": { const a = document.querySelector('a[rel="prev"]'); if (a) window.location.href = a.href; break; }
      case "]": { const a = document.querySelector('a[rel="next"]'); if (a) window.location.href = a.href; break; }
      case "Escape": hideSelectionBar(); break;
      default:
        if (/^[1-9]$/.test(key)) {
          if (!clickIn(`[data-action="pick"][data-number="${key}"]`)) toast("There is no candidate " + key + ".");
        } else handled = false;
    }
    if (handled) evt.preventDefault();
  });

  // --- start ---------------------------------------------------------------------------------------------
  const list = ids();
  const wanted = root.dataset.selected;
  const first = (wanted && list.includes(wanted)) ? wanted : (list.find((id) => OPEN.has(statusOf(id))) || list[0]);
  if (first) select(first);
})();
