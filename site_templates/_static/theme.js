// mnote-evidence: the theme (system, light or dark), remembered in localStorage for the whole site.
// Loaded without defer in <head>, so <html data-theme> is set before the body is parsed: the first
// paint already has the chosen theme. CSS does the rest (site.css: color-scheme and light-dark());
// without JavaScript the system's theme applies and the toggle stays hidden.
(function () {
  "use strict";
  var KEY = "mnote-theme";
  var root = document.documentElement;
  var dark = window.matchMedia("(prefers-color-scheme: dark)");
  var ICON = { system: "\u25D0", light: "\u2600", dark: "\u263E" };

  function stored() {
    try {
      var value = window.localStorage.getItem(KEY);
      return value === "light" || value === "dark" ? value : "system";
    } catch (e) {
      return "system"; // storage refused (privacy settings): the system's theme
    }
  }

  function apply(theme) {
    if (theme === "system") delete root.dataset.theme;
    else root.dataset.theme = theme;
  }

  // Each click changes what is seen: from the system's theme to its opposite, then the other, then back.
  function next(theme) {
    var systemDark = dark.matches;
    if (theme === "system") return systemDark ? "light" : "dark";
    if (theme === (systemDark ? "light" : "dark")) return systemDark ? "dark" : "light";
    return "system";
  }

  function label(button, theme) {
    button.textContent = ICON[theme];
    button.setAttribute("aria-label", "Theme: " + theme);
    button.title = "Theme: " + theme + " (click for " + next(theme) + ")";
  }

  var current = stored();
  apply(current);

  document.addEventListener("DOMContentLoaded", function () {
    var button = document.querySelector(".theme-toggle");
    if (!button) return;
    label(button, current);
    button.hidden = false;
    button.addEventListener("click", function () {
      current = next(current);
      try {
        if (current === "system") window.localStorage.removeItem(KEY);
        else window.localStorage.setItem(KEY, current);
      } catch (e) { /* not remembered; this page still switches */ }
      apply(current);
      label(button, current);
    });
    dark.addEventListener("change", function () { label(button, current); });
    // another tab of the site changed it
    window.addEventListener("storage", function (event) {
      if (event.key !== KEY && event.key !== null) return;
      current = stored();
      apply(current);
      label(button, current);
    });
  });
})();
