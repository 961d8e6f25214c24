// The transcript shows RECORDS_PER_PAGE records per page. A link to #record-N (from a memory's
// provenance) that is not on this page goes to the page that starts just before record N.
"use strict";
(function () {
  const match = /^#record-(\d+)$/.exec(window.location.hash);
  if (!match || document.getElementById("record-" + match[1])) return;
  const transcript = document.querySelector("[data-transcript]");
  if (!transcript) return;
  const params = new URLSearchParams(window.location.search);
  const after = String(Number(match[1]) - 1);
  if (params.get("after") === after) return;
  params.set("after", after);
  window.location.replace("?" + params.toString() + window.location.hash);
})();
