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
