// The top bar's "Manage" menu (a <details>): closes on a click elsewhere and on Escape, as a menu does.
document.addEventListener("click", (event) => {
  for (const menu of document.querySelectorAll("details.navmenu[open]")) {
    if (!menu.contains(event.target)) menu.removeAttribute("open");
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  for (const menu of document.querySelectorAll("details.navmenu[open]")) {
    menu.removeAttribute("open");
    menu.querySelector("summary").focus();
  }
});
