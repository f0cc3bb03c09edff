// Tide console: progressive enhancements only; every page works without it.
document.addEventListener("DOMContentLoaded", function () {
  // Forms with data-confirm ask before they change anything.
  document.querySelectorAll("form[data-confirm]").forEach(function (f) {
    f.addEventListener("submit", function (e) {
      if (!window.confirm(f.dataset.confirm)) e.preventDefault();
    });
  });
  // "Select all" checkboxes in tables.
  document.querySelectorAll("input.all").forEach(function (box) {
    box.addEventListener("change", function () {
      box.closest("table").querySelectorAll("input[name=id]").forEach(function (c) { c.checked = box.checked; });
    });
  });
});
