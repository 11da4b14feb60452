// The live feed: the server pushes an event when mail lands or the town's
// folders change (a mark, an archive, a claim); the page fetches itself
// again and swaps in, part by part, only what changed: each child of
// <main> (a section, a table, a form) the server renders differently from
// what it rendered before. A part the person is using is kept as it is —
// a field they typed in or chose from (a draft, a search not yet run, a
// priority), a selection of text, an open "as written" toggle, the
// keyboard focus — and the badge says that updates wait; it is brought up
// to date once they are done with it. No text is turned into HTML here:
// the server rendered (and escaped) all of it.
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
  // rendered keeps, for each part of <main>, the HTML the server sent for
  // it (before the times were made local): a part whose HTML is the same
  // in a new fetch has not changed, whatever the person did to it since.
  var rendered = new WeakMap();
  function remember(main) {
    if (!main) return;
    for (var i = 0; i < main.children.length; i++) rendered.set(main.children[i], main.children[i].outerHTML);
  }
  remember(document.getElementById("main"));
  localTimes(document);
  var badge = document.getElementById("live");
  if (!window.EventSource || !badge) return;
  var live = false, waitingFor = "";
  function show() {
    if (!live) return;
    badge.className = "live on" + (waitingFor ? " held" : "");
    badge.textContent = waitingFor ? "live — updates wait while " + waitingFor : "live";
  }
  function state(on, text) {
    live = on;
    badge.className = "live " + (on ? "on" : "off");
    badge.textContent = text;
    show();
  }
  function hold(why) {
    waitingFor = why;
    document.body.dataset.deferred = "1";
    show();
  }
  function unhold() {
    waitingFor = "";
    delete document.body.dataset.deferred;
    show();
  }
  // touched reports whether the person changed a field in el: typed,
  // chose, ticked; or has the keyboard in one.
  function touched(el) {
    var a = document.activeElement;
    if (a && el.contains(a) && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName)) return true;
    var fs = el.querySelectorAll("input, textarea, select");
    for (var i = 0; i < fs.length; i++) {
      var f = fs[i];
      if (f.type === "hidden") continue;
      if (f.tagName === "SELECT") {
        for (var j = 0; j < f.options.length; j++) if (f.options[j].selected !== f.options[j].defaultSelected) return true;
      } else if (f.type === "checkbox" || f.type === "radio") {
        if (f.checked !== f.defaultChecked) return true;
      } else if (f.value !== f.defaultValue) {
        return true;
      }
    }
    return false;
  }
  function selecting() {
    var s = window.getSelection();
    return s && !s.isCollapsed && s.toString().trim() !== "";
  }
  // key names a part of <main> across fetches: its id, else its tag and
  // its first heading, and its place among parts of the same name.
  function keys(main) {
    var seen = {}, out = [];
    for (var i = 0; i < main.children.length; i++) {
      var c = main.children[i], k = c.id ? "#" + c.id : c.tagName;
      if (!c.id) {
        var h = c.querySelector("h1, h2, summary");
        if (h) k += ":" + h.textContent;
      }
      seen[k] = (seen[k] || 0) + 1;
      out.push(k + "/" + seen[k]);
    }
    return out;
  }
  // carry keeps the person's toggles of the part being replaced: each
  // <details> open or closed as they left it.
  function carry(from, to) {
    if (!from) return;
    var a = from.querySelectorAll("details"), b = to.querySelectorAll("details");
    for (var i = 0; i < a.length && i < b.length; i++) b[i].open = a[i].open;
  }
  // morph brings main up to fresh part by part, and reports whether a
  // part was kept back for the person.
  var heldParts = []; // the parts kept back at the last update
  function morph(main, fresh) {
    var oldKeys = keys(main), newKeys = keys(fresh);
    heldParts = [];
    var old = {};
    for (var i = 0; i < main.children.length; i++) old[oldKeys[i]] = main.children[i];
    var want = [], parts = Array.prototype.slice.call(fresh.children);
    for (i = 0; i < parts.length; i++) {
      var n = parts[i], o = old[newKeys[i]], html = n.outerHTML;
      delete old[newKeys[i]];
      if (o && rendered.get(o) === html) { want.push(o); continue; }
      if (o && touched(o)) { want.push(o); heldParts.push(o); continue; }
      rendered.set(n, html);
      carry(o, n);
      localTimes(n);
      want.push(n);
    }
    // A part that is gone from the new page but holds the person's work
    // stays where it was until they are done with it.
    for (var k in old) {
      if (touched(old[k])) {
        heldParts.push(old[k]);
        var at = Array.prototype.indexOf.call(main.children, old[k]);
        want.splice(Math.min(at, want.length), 0, old[k]);
      }
    }
    for (i = 0; i < want.length; i++) {
      var here = main.children[i];
      if (here !== want[i]) main.insertBefore(document.adoptNode(want[i]), here || null);
    }
    while (main.children.length > want.length) main.removeChild(main.lastElementChild);
    return heldParts.length > 0;
  }
  // focusKey names the element in main that has the keyboard focus, so
  // that if its part is replaced the same element of the new part gets it
  // back: by id, else by what it is and where it points (a link's href, a
  // button's form action).
  function focusKey(main) {
    var a = document.activeElement;
    if (!main || !a || a === document.body || !main.contains(a)) return null;
    if (a.id) return { id: a.id };
    var form = a.form ? a.form.getAttribute("action") : null;
    return { tag: a.tagName, href: a.getAttribute("href"), form: form, text: a.textContent };
  }
  function refocus(main, key) {
    if (!main || !key || (document.activeElement && document.activeElement !== document.body)) return;
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
  var pending = false, again = false;
  function refresh() {
    if (pending) { again = true; return; }
    if (selecting()) { again = true; hold("text is selected"); return; }
    pending = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        if (selecting()) { again = true; hold("text is selected"); return; }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("main");
        var main = document.getElementById("main");
        if (!fresh || !main) return;
        var focus = focusKey(main);
        var held = morph(main, fresh);
        refocus(main, focus);
        if (held) {
          again = true; // the print shown is not the fresh one yet
          hold("you write");
        } else {
          main.dataset.print = fresh.dataset.print;
          unhold();
        }
        if (doc.title) document.title = doc.title;
        document.body.dataset.refreshed = String(Date.now());
        document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
      })
      .catch(function () {})
      .finally(function () { pending = false; retry(); });
  }
  // The person is done with what held an update back (a selection, a
  // part they were using): bring the page up to date.
  function retry() {
    if (!again || pending || selecting()) return;
    for (var i = 0; i < heldParts.length; i++) if (document.contains(heldParts[i]) && touched(heldParts[i])) return;
    again = false;
    refresh();
  }
  document.addEventListener("focusout", function () { setTimeout(retry, 0); });
  document.addEventListener("input", function () { setTimeout(retry, 0); });
  document.addEventListener("change", function () { setTimeout(retry, 0); });
  document.addEventListener("selectionchange", function () { if (waitingFor === "text is selected") setTimeout(retry, 0); });
  // One live feed per browser, shared by its tabs: a browser opens at
  // most 6 connections to a host, and a feed holds one for as long as its
  // tab is open, so a feed per tab left a 7th tab unable to load at all.
  // The tabs of this origin elect a leader with a Web Lock: the tab that
  // holds "mailfs-live" keeps the one EventSource and passes on each event
  // and each change of its state over a BroadcastChannel; when it closes,
  // the lock passes to another tab, which opens the feed again. A browser
  // without Web Locks or BroadcastChannel gives each tab its own feed.
  var dropped = false, everLive = false;
  function onOpen() {
    state(true, "live");
    if (dropped) refresh(); // catch up on what landed while the feed was down
    dropped = false;
    everLive = true;
  }
  function onDrop() {
    dropped = true;
    state(false, "live feed lost — reconnecting…");
  }
  function feed(handle) {
    var es = new EventSource("/events");
    es.onopen = function () { handle({ state: "open" }); };
    es.onerror = function () { handle({ state: "lost" }); };
    es.addEventListener("mail", function (e) { handle({ event: "mail", data: e.data }); });
    es.addEventListener("change", function (e) { handle({ event: "change", data: e.data }); });
    return es;
  }
  function hear(m) {
    if (m.state === "open") onOpen();
    else if (m.state === "lost") onDrop();
    else if (m.event) onEvent({ data: m.data });
  }
  var shared = window.BroadcastChannel && navigator.locks && navigator.locks.request;
  if (!shared) {
    feed(hear);
  } else {
    var bc = new BroadcastChannel("mailfs-live"), leading = false, last = null;
    bc.onmessage = function (e) {
      var m = e.data || {};
      if (m.ask) { if (leading && last) bc.postMessage(last); return; }
      if (leading) return;
      // A new leader's feed opening: what landed between the two
      // leaders' feeds is fetched once.
      if (m.state === "open" && m.leader && everLive) dropped = true;
      hear(m);
    };
    navigator.locks.request("mailfs-live", function () {
      leading = true;
      document.body.dataset.feed = "leader";
      if (everLive) dropped = true; // the last leader's feed is gone
      feed(function (m) {
        if (m.state) { m.leader = true; last = m; }
        bc.postMessage(m);
        hear(m);
      });
      return new Promise(function () {}); // held as long as this tab is open
    });
    bc.postMessage({ ask: true }); // the leader's feed may be open already
  }
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
})();
