// MemoryHub dashboard behaviour shared by every page. No inline scripts (CSP script-src 'self').
"use strict";
(function () {
  // Buttons with data-copy="<element id>" copy that element's text (e.g. a new token).
  document.addEventListener("click", function (event) {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      button.dataset.copied = "true";
      button.textContent = button.dataset.copiedLabel || "Copied";
    });
  });

  // Typed confirmation: a form with data-confirm-value enables its submit button only once the
  // input named "confirm" holds exactly that value (the server checks again; without
  // JavaScript the button stays enabled and the server alone decides).
  function syncConfirm(form) {
    const input = form.querySelector("input[name=confirm]");
    const ok = input !== null && input.value.trim() === form.dataset.confirmValue;
    form.querySelectorAll("button[type=submit]").forEach(function (b) { b.disabled = !ok; });
  }
  document.addEventListener("input", function (event) {
    const form = event.target.closest("form[data-confirm-value]");
    if (form && event.target.name === "confirm") syncConfirm(form);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-confirm-value]").forEach(syncConfirm);
  });

  // A plain form with data-confirm="<question>" asks before it submits, as hx-confirm does
  // for htmx forms (one-click destructive actions: leaving, removing a member).
  document.addEventListener("submit", function (event) {
    const form = event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) event.preventDefault();
  });

  // Memory text shows as typed, in the page's font so prose reads as prose; its fenced code
  // blocks (``` or ~~~ lines) get a monospace block. Built from text nodes only: nothing in
  // the text is ever parsed as HTML. Without JavaScript the text shows as it is.
  const FENCE = /^[ \t]*(```|~~~)/;
  function markCode(pre) {
    if (pre.dataset.codeMarked || !/^[ \t]*(```|~~~)/m.test(pre.textContent)) return;
    pre.dataset.codeMarked = "true";
    const parts = [];  // [isCode, text]
    let fence = null;
    pre.textContent.split(/(?<=\n)/).forEach(function (line) {
      const match = FENCE.exec(line);
      const inCode = fence !== null || match !== null;
      if (fence === null && match) fence = match[1];
      else if (fence !== null && match && match[1] === fence && line.trim() === fence) fence = null;
      const last = parts[parts.length - 1];
      if (last && last[0] === inCode) last[1] += line; else parts.push([inCode, line]);
    });
    pre.textContent = "";
    parts.forEach(function (part) {
      if (!part[0]) { pre.appendChild(document.createTextNode(part[1])); return; }
      const code = document.createElement("code");
      code.className = "code-block";
      code.textContent = part[1];
      pre.appendChild(code);
    });
  }
  function markAll(root) {
    if (root.matches && root.matches("pre.memory-content")) markCode(root);
    if (root.querySelectorAll) root.querySelectorAll("pre.memory-content").forEach(markCode);
  }
  document.addEventListener("DOMContentLoaded", function () { markAll(document); });
  document.addEventListener("htmx:load", function (event) { markAll(event.target); });

  // File inputs with data-mtimes="<hidden input id>": an upload carries no modification times,
  // so the times the browser knows go along as JSON {file name: ms since the epoch}.
  document.addEventListener("change", function (event) {
    const input = event.target.closest("input[type=file][data-mtimes]");
    if (!input) return;
    const target = document.getElementById(input.dataset.mtimes);
    if (!target) return;
    const times = {};
    Array.prototype.forEach.call(input.files, function (file) { times[file.name] = file.lastModified; });
    target.value = JSON.stringify(times);
  });

  // "Select all" checkboxes: data-select-all="<checkbox name>".
  document.addEventListener("change", function (event) {
    const all = event.target.closest("[data-select-all]");
    if (!all) return;
    document.querySelectorAll('input[type=checkbox][name="' + all.dataset.selectAll + '"]')
      .forEach(function (box) { box.checked = all.checked; });
  });
})();
