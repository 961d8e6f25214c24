// Review queue keyboard: j/k move, a approve, r reject (focus the reason; Enter submits),
// e edit then approve, x select. A static file: the CSP allows no inline script.
"use strict";
(function () {
  let current = -1;

  function items() {
    return Array.from(document.querySelectorAll("[data-review-item]"));
  }

  function open() {
    return items().filter(function (li) { return !li.classList.contains("resolved"); });
  }

  function focusItem(index) {
    const list = items();
    if (list.length === 0) return;
    current = Math.max(0, Math.min(index, list.length - 1));
    list.forEach(function (li, i) { li.classList.toggle("current", i === current); });
    list[current].focus({ preventScroll: true });
    list[current].scrollIntoView({ block: "nearest" });
  }

  function currentItem() {
    const list = items();
    if (current < 0 || current >= list.length) focusItem(0);
    return items()[current] || null;
  }

  function typing(target) {
    return target.closest("input, textarea, select, [contenteditable]") !== null;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && typing(event.target)) {
      event.target.blur();
      const li = event.target.closest("[data-review-item]");
      if (li) li.focus();
      return;
    }
    if (typing(event.target) || items().length === 0) return;
    const item = currentItem();
    if (!item) return;
    let control = null;
    switch (event.key) {
      case "j": focusItem(current + 1); break;
      case "k": focusItem(current - 1); break;
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
      current = index;
      list.forEach(function (el, i) { el.classList.toggle("current", i === current); });
      const field = swapped.querySelector("textarea, input:not([type=checkbox]):not([type=hidden])");
      if (field) field.focus(); else swapped.focus();
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    if (open().length > 0) focusItem(items().indexOf(open()[0]));
  });
})();
