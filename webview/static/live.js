// The live feed: the server pushes an event when mail lands or the town's
// folders change (a mark, an archive, a claim); the page
// fetches itself again and swaps in the new <main>. No text is turned
// into HTML here: the server rendered (and escaped) all of it.
(function () {
  var badge = document.getElementById("live");
  if (!window.EventSource || !badge) return;
  function state(on, text) {
    badge.className = "live " + (on ? "on" : "off");
    badge.textContent = text;
  }
  var pending = false, again = false;
  // writing reports whether the person is in a form field, or has left
  // text in one: the refresh waits.
  function writing() {
    var a = document.activeElement;
    if (a && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) return true;
    var fields = document.querySelectorAll("form.compose textarea, form.compose input:not([type=hidden])");
    for (var i = 0; i < fields.length; i++) if (fields[i].value.trim() !== "") return true;
    return false;
  }
  function refresh() {
    if (pending) { again = true; return; }
    if (writing()) {
      again = true; // do not pull a form from under the person writing
      document.body.dataset.deferred = "1";
      return;
    }
    delete document.body.dataset.deferred;
    pending = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (writing()) {
          // The person began writing while the page was fetched: keep
          // their form, and refresh once they leave it.
          again = true;
          document.body.dataset.deferred = "1";
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (fresh && main) main.replaceWith(document.adoptNode(fresh));
        document.body.dataset.refreshed = String(Date.now());
      })
      .catch(function () {})
      .finally(function () {
        pending = false;
        if (again && !writing()) { again = false; refresh(); }
      });
  }
  function retry() { if (again) { again = false; refresh(); } }
  document.addEventListener("focusout", function () { setTimeout(retry, 0); });
  document.addEventListener("input", function (e) { if (e.target.value === "") setTimeout(retry, 0); });
  var dropped = false;
  var es = new EventSource("/events");
  es.onopen = function () {
    state(true, "live");
    if (dropped) refresh(); // catch up on what landed while the feed was down
    dropped = false;
  };
  es.onerror = function () {
    dropped = true;
    state(false, "live feed lost — reconnecting…");
  };
  es.addEventListener("mail", refresh);
  es.addEventListener("change", refresh);
})();
