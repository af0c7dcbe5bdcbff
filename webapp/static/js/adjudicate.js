// Keyboard-first adjudication: j/k move between spans, 1-9 take that annotator's decision, n NIL, x not a
// mention, / search another concept. After a decision the page reloads on the next open disagreement.
(function () {
  "use strict";
  const container = document.getElementById("units");
  if (!container) return;
  const units = Array.from(container.querySelectorAll(".unit"));
  if (!units.length) return;
  let current = -1;

  function select(i, scroll) {
    if (i < 0 || i >= units.length) return;
    if (current >= 0) units[current].classList.remove("unit-selected");
    current = i;
    units[i].classList.add("unit-selected");
    units[i].focus({ preventScroll: true });
    if (scroll !== false) units[i].scrollIntoView({ block: "center", behavior: "smooth" });
    document.querySelectorAll(".text-unit.unit-selected").forEach((el) => el.classList.remove("unit-selected"));
    const mark = document.getElementById("text-" + units[i].dataset.key);
    if (mark) mark.classList.add("unit-selected");
  }

  function keyIndex(key) {
    return units.findIndex((u) => u.dataset.key === key);
  }

  function firstOpenAfter(position) {
    const open = units.findIndex((u, i) => i > position && u.dataset.open === "1");
    if (open >= 0) return open;
    const wrapped = units.findIndex((u) => u.dataset.open === "1");
    return wrapped >= 0 ? wrapped : Math.min(position + 1, units.length - 1);
  }

  const wanted = container.dataset.selected || "";
  if (wanted.startsWith("next-")) {
    select(firstOpenAfter(keyIndex(wanted.slice(5))));
  } else if (wanted && keyIndex(wanted) >= 0) {
    select(keyIndex(wanted));
  } else {
    select(firstOpenAfter(-1), false);
  }

  units.forEach((u, i) => u.addEventListener("click", () => { if (current !== i) select(i, false); }));
  document.querySelectorAll(".text-unit").forEach((mark) => {
    mark.addEventListener("click", () => select(keyIndex(mark.dataset.key)));
  });

  document.addEventListener("keydown", (event) => {
    const target = event.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement) {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || current < 0) return;
    const unit = units[current];
    let form = null;
    if (event.key === "j") { select(current + 1); event.preventDefault(); return; }
    if (event.key === "k") { select(current - 1); event.preventDefault(); return; }
    if (event.key === "/") { unit.querySelector(".concept-search").focus(); event.preventDefault(); return; }
    if (/^[1-9]$/.test(event.key)) form = unit.querySelector('.take-form[data-index="' + event.key + '"]');
    if (event.key === "n") form = unit.querySelector(".nil-form");
    if (event.key === "x") form = unit.querySelector(".reject-form");
    if (form) { event.preventDefault(); form.requestSubmit(); }
  });
})();
