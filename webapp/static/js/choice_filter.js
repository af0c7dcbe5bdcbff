// A filter box over a long list of checkboxes (templates/training/_loop_fields.html): typing hides the choices whose
// label does not contain the text, and a group (a vocabulary's types) with none left; checked choices stay visible.
// Django renders the list as <div id=field> then per group <div><label>group</label><div><label><input>…</label></div>…</div>.
(function () {
  function apply(input) {
    var box = document.getElementById(input.dataset.filters);
    if (!box) return;
    var words = input.value.trim().toLowerCase();
    box.querySelectorAll("input[type=checkbox]").forEach(function (check) {
      var option = check.closest("label").parentElement;
      var text = check.closest("label").textContent.toLowerCase();
      option.hidden = !(words === "" || check.checked || text.indexOf(words) !== -1);
    });
    box.querySelectorAll(":scope > div > div").forEach(function (group) {
      var options = group.querySelectorAll(":scope > div");
      if (options.length === 0) return;  // an ungrouped option, handled above
      group.hidden = Array.prototype.every.call(options, function (o) { return o.hidden; });
    });
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("input.choices-filter")) apply(event.target);
  });
})();
