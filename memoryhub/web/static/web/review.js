// Review queue keyboard: j/k move, a approve, r reject (focus the reason; Enter submits),
// e edit then approve, x select. A static file: the CSP allows no inline script.
// The keys act on the item that holds the keyboard focus, never on one remembered from
// earlier: focus elsewhere (the sidebar, the bulk bar, a text field) and they do nothing.
"use strict";
(function () {
  function items() {
    return Array.from(document.querySelectorAll("[data-review-item]"));
  }

  function highlight(item) {
    items().forEach(function (li) { li.classList.toggle("current", li === item); });
  }

  function focusItem(index) {
    const list = items();
    if (list.length === 0) return;
    const item = list[Math.max(0, Math.min(index, list.length - 1))];
    highlight(item);
    item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  // The highlight follows the focus into an item (Tab, a click), so what is marked is what
  // the keys act on.
  document.addEventListener("focusin", function (event) {
    const item = event.target.closest && event.target.closest("[data-review-item]");
    if (item) highlight(item);
  });

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    // Enter in the bulk reason rejects: left alone, the browser would press the form's first
    // button, "Approve selected".
    if (event.key === "Enter" && event.target.id === "bulk-reason") {
      const reject = event.target.form.querySelector("button[value=reject]");
      if (reject) {
        event.preventDefault();
        event.target.form.requestSubmit(reject);
      }
      return;
    }
    if (event.key === "Escape" && typing(event.target)) {
      event.target.blur();
      const li = event.target.closest("[data-review-item]");
      if (li) li.focus();
      return;
    }
    if (typing(event.target)) return;
    const item = event.target.closest("[data-review-item]");
    if (!item) return;
    const index = items().indexOf(item);
    let control = null;
    switch (event.key) {
      case "j": focusItem(index + 1); break;
      case "k": focusItem(index - 1); break;
      case "a": control = item.querySelector("[data-action=approve]"); if (control) control.click(); break;
      case "e": control = item.querySelector("[data-action=edit]"); if (control) control.click(); break;
      case "r": control = item.querySelector("[data-action=reason]"); if (control) control.focus(); break;
      case "x": control = item.querySelector("input[name=selected]"); if (control) control.checked = !control.checked; break;
      default: return;
    }
    event.preventDefault();
  });

  // After an item is swapped (htmx:load fires on the new element): an approved or rejected
  // item moves the focus to the next open one, an edit form gets its first field focused.
  document.addEventListener("htmx:load", function (event) {
    const swapped = event.target;
    if (!swapped || !swapped.matches || !swapped.matches("[data-review-item]")) return;
    const list = items();
    const index = list.indexOf(swapped);
    if (swapped.classList.contains("resolved")) {
      const next = list.findIndex(function (el, i) { return i > index && !el.classList.contains("resolved"); });
      const fallback = list.findIndex(function (el) { return !el.classList.contains("resolved"); });
      focusItem(next >= 0 ? next : (fallback >= 0 ? fallback : index));
    } else {
      highlight(swapped);
      const field = swapped.querySelector("textarea, input:not([type=checkbox]):not([type=hidden])");
      if (field) field.focus(); else swapped.focus();
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    const open = items().filter(function (li) { return !li.classList.contains("resolved"); });
    if (open.length > 0) focusItem(items().indexOf(open[0]));
  });
})();
