// The live feed: the server pushes an event when mail lands or the town's
// folders change (a mark, an archive, a claim); the page
// fetches itself again and swaps in the new <main>, the keyboard focus
// kept where it was. No text is turned into HTML here: the server
// rendered (and escaped) all of it.
(function () {
  // Times in the reader's own zone: the server knows only UTC. A full
  // time (class "when") is rewritten; an age ("3d") keeps its text and
  // gets the local time as its title.
  function localTimes(root) {
    var ts = (root || document).querySelectorAll("time[datetime]");
    for (var i = 0; i < ts.length; i++) {
      var d = new Date(ts[i].getAttribute("datetime"));
      if (isNaN(d)) continue;
      var local = d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
      ts[i].title = local;
      if (ts[i].classList.contains("when")) ts[i].textContent = local;
    }
  }
  localTimes(document);
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
  // focusKey names the element in main that has the keyboard focus, so
  // the same element of the new main gets it back: by id, else by what
  // it is and where it points (a link's href, a button's form action).
  function focusKey(main) {
    var a = document.activeElement;
    if (!main || !a || a === document.body || !main.contains(a)) return null;
    if (a.id) return { id: a.id };
    var form = a.form ? a.form.getAttribute("action") : null;
    return { tag: a.tagName, href: a.getAttribute("href"), form: form, text: a.textContent };
  }
  function refocus(main, key) {
    if (!main || !key) return;
    var el = null;
    if (key.id) {
      el = document.getElementById(key.id);
    } else {
      var all = main.getElementsByTagName(key.tag);
      for (var i = 0; i < all.length && !el; i++) {
        var c = all[i];
        var form = c.form ? c.form.getAttribute("action") : null;
        if (c.getAttribute("href") === key.href && form === key.form && c.textContent === key.text) el = c;
      }
    }
    if (el && el.focus) el.focus({ preventScroll: true });
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
        var focus = focusKey(main);
        if (fresh && main) main.replaceWith(document.adoptNode(fresh));
        refocus(fresh, focus);
        localTimes(fresh);
        document.body.dataset.refreshed = String(Date.now());
        document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
      })
      .catch(function () {})
      .finally(function () {
        pending = false;
        if (again && !writing()) { again = false; if (!shown()) refresh(); }
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
  // An event carries the folder print it stands for; the page carries the
  // print it was read at. Equal, the page shows it already: no refetch
  // (a send's mail event and the folder change it made are one).
  var wanted = ""; // the print of the last event
  function shown() {
    var main = document.getElementById("main");
    return wanted !== "" && main !== null && main.dataset.print === wanted;
  }
  function onEvent(e) {
    wanted = "";
    try { wanted = JSON.parse(e.data).print || ""; } catch (err) {}
    if (shown()) return;
    refresh();
  }
  es.addEventListener("mail", onEvent);
  es.addEventListener("change", onEvent);
})();
