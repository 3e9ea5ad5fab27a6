// Weir console: progressive enhancement only. Every page works without this
// script except its live parts. No framework, no build step.
//
//   [data-live="<same-origin SSE url>"]  innerHTML replaced by each event's
//       data (an HTML fragment rendered by the server). EventSource reconnects
//       on its own; the element gets data-live-state="open"|"reconnecting".
//       A "weir:live" event bubbles from the element after each update.
//   [data-countdown-until="<RFC3339>"]  text ticks every second ("1m 05s",
//       "12s", then "now" and the attribute data-countdown-done).
//   [data-copy-target="<css selector>"]  button copying the target's value or
//       text to the clipboard (shown only when the script runs).
//   [data-since="<RFC3339>"]  text ticks every second as the time since
//       ("12s ago", "3m ago", "2h ago", "4d ago"; web.Ago renders the same).
//   select[data-autosubmit]  submits its form on change.
//   form[data-confirm="<question>"]  asks before submitting.
//   input[type=file][data-fill-target="<css selector>"]  reads the chosen
//       file as text into the target (a textarea), refusing one larger than
//       data-fill-max bytes; the file itself is never uploaded.
(function () {
  "use strict";

  document.documentElement.classList.add("js");

  function pad2(n) { return n < 10 ? "0" + n : String(n); }

  function remaining(ms) {
    if (ms <= 0) { return "now"; }
    var s = Math.max(1, Math.round(ms / 1000));
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, sec = s % 60;
    if (h > 0) { return h + "h " + pad2(m) + "m"; }
    if (m > 0) { return m + "m " + pad2(sec) + "s"; }
    return sec + "s";
  }

  function tickCountdowns() {
    var now = Date.now();
    var els = document.querySelectorAll("[data-countdown-until]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var until = Date.parse(el.getAttribute("data-countdown-until"));
      if (isNaN(until)) { continue; }
      var text = remaining(until - now);
      if (el.textContent !== text) { el.textContent = text; }
      if (until <= now && !el.hasAttribute("data-countdown-done")) {
        el.setAttribute("data-countdown-done", "");
        el.dispatchEvent(new CustomEvent("weir:countdown-done", { bubbles: true }));
      }
    }
  }

  function ago(ms) {
    var s = Math.floor(ms / 1000);
    if (s < 1) { return "just now"; }
    if (s < 60) { return s + "s ago"; }
    if (s < 3600) { return Math.floor(s / 60) + "m ago"; }
    if (s < 86400) { return Math.floor(s / 3600) + "h ago"; }
    return Math.floor(s / 86400) + "d ago";
  }

  function tickAges() {
    var now = Date.now();
    var els = document.querySelectorAll("[data-since]");
    for (var i = 0; i < els.length; i++) {
      var since = Date.parse(els[i].getAttribute("data-since"));
      if (isNaN(since)) { continue; }
      var text = ago(now - since);
      if (els[i].textContent !== text) { els[i].textContent = text; }
    }
  }

  function startLive(el) {
    if (el.__weirLive || !window.EventSource) { return; }
    var src = el.getAttribute("data-live");
    if (!src) { return; }
    var es = new EventSource(src);
    el.__weirLive = es;
    es.onopen = function () { el.setAttribute("data-live-state", "open"); };
    es.onerror = function () {
      // EventSource retries by itself unless the server answered with an
      // error status; then it is CLOSED and the page keeps its last content.
      el.setAttribute("data-live-state", es.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
    };
    es.onmessage = function (ev) {
      el.innerHTML = ev.data;
      tickCountdowns();
      tickAges();
      scan(el);
      el.dispatchEvent(new CustomEvent("weir:live", { bubbles: true }));
    };
  }

  function copy(btn) {
    var target = document.querySelector(btn.getAttribute("data-copy-target"));
    if (!target) { return; }
    var text = "value" in target && target.value !== undefined ? target.value : target.textContent;
    var done = function () {
      var label = btn.textContent;
      btn.textContent = "Copied";
      btn.setAttribute("data-copied", "");
      setTimeout(function () { btn.textContent = label; btn.removeAttribute("data-copied"); }, 1500);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text.trim()).then(done, function () {});
    }
  }

  function scan(root) {
    var lives = root.querySelectorAll("[data-live]");
    for (var i = 0; i < lives.length; i++) { startLive(lives[i]); }
    var copies = root.querySelectorAll("[data-copy-target]");
    for (var j = 0; j < copies.length; j++) { copies[j].hidden = false; }
  }

  document.addEventListener("click", function (ev) {
    var btn = ev.target.closest ? ev.target.closest("[data-copy-target]") : null;
    if (btn) { ev.preventDefault(); copy(btn); }
  });

  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.matches && el.matches("select[data-autosubmit]") && el.form) {
      if (el.form.requestSubmit) { el.form.requestSubmit(); } else { el.form.submit(); }
    }
  });

  document.addEventListener("submit", function (ev) {
    var form = ev.target;
    var q = form.getAttribute && form.getAttribute("data-confirm");
    if (q && !window.confirm(q)) { ev.preventDefault(); }
  });

  function init() {
    scan(document);
    tickCountdowns();
    tickAges();
    setInterval(function () { tickCountdowns(); tickAges(); }, 1000);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
  document.addEventListener("change", function (ev) {
    var input = ev.target;
    if (!input || input.type !== "file" || !input.hasAttribute("data-fill-target")) { return; }
    var target = document.querySelector(input.getAttribute("data-fill-target"));
    var file = input.files && input.files[0];
    if (!target || !file) { return; }
    var most = parseInt(input.getAttribute("data-fill-max"), 10) || 65536;
    if (file.size > most) {
      input.setCustomValidity("The file is larger than " + most + " bytes.");
      input.reportValidity();
      input.value = "";
      return;
    }
    input.setCustomValidity("");
    var reader = new FileReader();
    reader.onload = function () { target.value = String(reader.result); };
    reader.readAsText(file);
  });
})();
