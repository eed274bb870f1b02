// Capsule web view: appends the timeline's live events (server-sent
// events from the node) to the page. The page reads without it.
(function () {
  "use strict";
  var tl = document.getElementById("timeline");
  if (!tl || !tl.dataset.live || !window.EventSource) return;
  var stream = document.getElementById("streaming");
  var state = document.getElementById("live-state");
  var es = new EventSource(tl.dataset.live);
  es.addEventListener("open", function () { if (state) state.textContent = "connected"; });
  es.addEventListener("error", function () { if (state) state.textContent = "reconnecting"; });
  es.addEventListener("item", function (e) {
    var seen = Date.now();
    var tmp = document.createElement("template");
    tmp.innerHTML = e.data;
    var li = tmp.content.firstElementChild;
    if (!li || document.getElementById(li.id)) return;
    li.dataset.seen = String(seen);
    tl.appendChild(li);
    if (stream && li.dataset.kind === "assistant") stream.textContent = "";
  });
  es.addEventListener("delta", function (e) {
    if (!stream) return;
    stream.textContent += JSON.parse(e.data).text;
    stream.dataset.deltas = String((+stream.dataset.deltas || 0) + 1);
  });
  es.addEventListener("state", function (e) {
    if (state) state.textContent = e.data;
  });
  es.addEventListener("reload", function () {
    es.close(); // too far behind for one page: the page is read again
    location.reload();
  });
  es.addEventListener("failed", function (e) {
    if (state) state.textContent = "stream ended: " + e.data;
    es.close();
  });
})();
