// The import forms: a file over the upload limit is refused before it is sent (the server refuses it too), and
// the submit button says the upload is under way, so a large file is not sent twice.
(function () {
  "use strict";

  function sizeError(input) {
    const max = Number(input.dataset.maxBytes || 0);
    const file = input.files && input.files[0];
    if (!max || !file || file.size <= max) return "";
    return `${file.name} is ${file.size.toLocaleString("en")} bytes, over the ${max.toLocaleString("en")}-byte ` +
      "limit (IMPORT_MAX_UPLOAD_BYTES)";
  }

  function showError(input, message) {
    const field = input.closest(".field");
    let node = field.querySelector(".field-error[data-client]");
    if (!message) {
      if (node) node.remove();
      input.removeAttribute("aria-invalid");
      return;
    }
    if (!node) {
      node = document.createElement("div");
      node.className = "field-error";
      node.dataset.client = "";
      node.setAttribute("role", "alert");
      field.appendChild(node);
    }
    node.textContent = message;
    input.setAttribute("aria-invalid", "true");
  }

  function wire(form) {
    const inputs = form.querySelectorAll("input[type=file][data-max-bytes]");
    inputs.forEach((input) => input.addEventListener("change", () => showError(input, sizeError(input))));
    form.addEventListener("submit", (event) => {
      for (const input of inputs) {
        const message = sizeError(input);
        if (message) {
          event.preventDefault();
          showError(input, message);
          input.focus();
          return;
        }
      }
      const button = form.querySelector("button[type=submit]");
      if (button && button.dataset.busyLabel) {
        button.dataset.idleLabel = button.textContent;
        button.textContent = button.dataset.busyLabel;
        // Disabled after this event, so that the browser still sends the form.
        setTimeout(() => { button.disabled = true; }, 0);
      }
    });
  }

  // Back from the Imports page (bfcache): the button works again.
  window.addEventListener("pageshow", () => {
    document.querySelectorAll(".import-form button[data-idle-label]").forEach((button) => {
      button.disabled = false;
      button.textContent = button.dataset.idleLabel;
    });
  });

  document.addEventListener("DOMContentLoaded", () => document.querySelectorAll(".import-form form").forEach(wire));
})();
