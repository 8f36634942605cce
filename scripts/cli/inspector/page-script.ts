// Owns the inspector page's script, shipped as a string module (decision 080): plain DOM,
// no library. It reads the JSON views and re-renders when `/events` says something
// changed; it never polls. Every piece of session or plugin text is put into the page
// with `textContent` or a text node, never parsed as HTML.

// biome-ignore lint/complexity/noUselessStringRaw: raw, so that a "\n" or a regular expression added to the script later reaches the browser as written
export const pageScript = String.raw`"use strict";
(function () {
  var selected = null;
  var revision = 0;
  var openUpdates = new Set();
  var openValues = new Set();
  var running = false;
  var again = false;

  function $(id) { return document.getElementById(id); }

  // An element with attributes and children (strings become text nodes).
  function el(tag, attributes, children) {
    var node = document.createElement(tag);
    var names = Object.keys(attributes || {});
    for (var i = 0; i < names.length; i++) node.setAttribute(names[i], attributes[names[i]]);
    append(node, children);
    return node;
  }
  function svg(tag, attributes, children) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    var names = Object.keys(attributes || {});
    for (var i = 0; i < names.length; i++) node.setAttribute(names[i], String(attributes[names[i]]));
    append(node, children);
    return node;
  }
  function append(node, children) {
    if (children === undefined || children === null) return;
    if (!Array.isArray(children)) children = [children];
    for (var i = 0; i < children.length; i++) {
      var child = children[i];
      if (child === undefined || child === null) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  function when(iso) {
    if (!iso) return "before the inspector";
    var date = new Date(iso);
    return date.toLocaleTimeString(undefined, { hour12: false }) + "." + String(date.getMilliseconds()).padStart(3, "0");
  }
  function size(bytes) {
    return bytes < 1024 ? bytes + " B" : (bytes / 1024).toFixed(1) + " kB";
  }
  function rows(table, list) {
    table.tBodies[0].replaceChildren.apply(table.tBodies[0], list);
  }

  async function json(path) {
    var response = await fetch(path, { cache: "no-store" });
    if (response.status === 404) return undefined;
    if (!response.ok) throw new Error(path + ": HTTP " + response.status);
    return response.json();
  }

  function renderSessions(sessions) {
    // Until the first read arrives it says "Loading…", not that there is no session.
    $("no-sessions").textContent = "No session yet. Type a prompt in the terminal.";
    $("no-sessions").dataset.state = "loaded";
    $("no-sessions").hidden = sessions.length > 0;
    $("sessions").replaceChildren.apply($("sessions"), sessions.map(function (session) {
      var button = el("button", { type: "button", title: session.id, "aria-current": String(session.id === selected) },
        [session.id.slice(0, 8), el("br"), el("span", { class: "muted" }, session.provider + "/" + session.model)]);
      button.addEventListener("click", function () { selected = session.id; schedule(); });
      return el("li", { "data-session": session.id }, button);
    }));
  }

  function renderSession(view) {
    $("session").hidden = !view;
    if (!view) return;
    $("session-title").textContent = "Session " + view.id;
    $("session-meta").textContent = view.provider + "/" + view.model + " in " + view.location + " · " +
      view.messages.length + " messages · epoch " + (view.epoch === null ? "none yet" : view.epoch);
    rows($("epochs"), view.epochs.map(function (epoch) {
      var baseline = epoch.baseline === null ? "not seen" :
        el("details", {}, [el("summary", {}, "Baseline"), el("pre", {}, epoch.baseline)]);
      return el("tr", { "data-epoch": String(epoch.number) },
        [el("td", {}, String(epoch.number)), el("td", {}, epoch.reason), el("td", {}, when(epoch.at)), el("td", {}, baseline)]);
    }));
    $("baseline").textContent = view.baseline === null ? "(no boundary yet)" : view.baseline;
    rows($("snapshot"), view.snapshot.map(function (row) {
      return el("tr", { "data-key": row.key }, [
        el("td", {}, el("code", {}, row.key)),
        el("td", { class: "value" }, valueOf(row.key, row.value)),
        el("td", {}, when(row.admittedAt)),
      ]);
    }));
    renderTimeline(view);
    renderRequests(view.requests);
  }

  // A snapshot value: short JSON on one line; longer JSON folded, opened as indented JSON
  // (what is open stays open across renders, as in the timeline).
  function valueOf(key, value) {
    var line = JSON.stringify(value);
    if (line.length <= 60) return el("code", {}, line);
    var details = el("details", { "data-key": key }, [
      el("summary", {}, el("code", {}, line.slice(0, 57) + "…")),
      el("pre", {}, JSON.stringify(value, null, 2)),
    ]);
    details.open = openValues.has(key);
    details.addEventListener("toggle", function () { if (details.open) openValues.add(key); else openValues.delete(key); });
    return details;
  }

  function renderTimeline(view) {
    // What is open now wins: a click opens a details element at once, its toggle event comes
    // later, and a render in between must not fold it again.
    var shown = $("timeline").querySelectorAll("details[data-seq]");
    for (var d = 0; d < shown.length; d++) {
      var shownSeq = Number(shown[d].dataset.seq);
      if (shown[d].open) openUpdates.add(shownSeq);
      else openUpdates.delete(shownSeq);
    }
    var items = [];
    var epoch = null;
    for (var i = 0; i < view.messages.length; i++) {
      var message = view.messages[i];
      if (message.epoch !== epoch) {
        epoch = message.epoch;
        items.push(el("li", { class: "epoch-start" }, "— epoch " + epoch + " —"));
      }
      if (message.isSystemUpdate) {
        var details = el("details", { "data-seq": String(message.seq) }, [
          el("summary", {}, "Mid-Conversation System Message · #" + message.seq),
          el("pre", {}, message.text),
        ]);
        details.open = openUpdates.has(message.seq);
        details.addEventListener("toggle", (function (seq, node) {
          return function () { if (node.open) openUpdates.add(seq); else openUpdates.delete(seq); };
        })(message.seq, details));
        items.push(el("li", { class: "system-update", "data-role": message.role, "data-seq": String(message.seq) }, details));
      } else {
        var label = message.role + (message.toolNames ? " · " + message.toolNames.join(", ") : "") + " · #" + message.seq;
        items.push(el("li", { "data-role": message.role, "data-seq": String(message.seq) },
          [el("div", { class: "role" }, label), el("pre", {}, message.text)]));
      }
    }
    $("timeline").replaceChildren.apply($("timeline"), items);
  }

  // One bar per request, its length the request's size against the largest, split into
  // the prefix the previous request already sent (reused) and the rest (new).
  function renderRequests(requests) {
    var largest = 1;
    for (var i = 0; i < requests.length; i++) largest = Math.max(largest, requests[i].bytes);
    var width = 260;
    $("requests").replaceChildren.apply($("requests"), requests.map(function (request) {
      var total = Math.max(1, Math.round((request.bytes / largest) * width));
      var reused = request.bytes === 0 ? 0 : Math.round((request.reusedBytes / request.bytes) * total);
      var share = request.bytes === 0 ? 0 : Math.round((request.reusedBytes / request.bytes) * 100);
      var title = "request " + request.index + ": " + request.reusedBytes + " of " + request.bytes + " bytes reused (" + share + "%), " +
        request.newBytes + " new; " + request.prefix + (request.reason ? " (" + request.reason + ")" : "");
      var chart = svg("svg", { width: width, height: 14, role: "img", "aria-label": title }, [
        svg("title", {}, title),
        svg("rect", { class: "reused", x: 0, y: 1, width: reused, height: 12 }),
        svg("rect", { class: "new", x: reused, y: 1, width: total - reused, height: 12 }),
      ]);
      var label = "#" + request.index + " · " + share + "% of " + size(request.bytes) + " reused" +
        (request.prefix === "new-epoch" ? " · new epoch" : request.prefix === "break-within-epoch" ? " · BREAK" : "");
      var parts = [el("span", {}, label), chart];
      // The cache model's figures on the session's model: tokens read, written and uncached, the price, and a miss's reason.
      var cache = request.cache;
      if (cache) {
        parts.push(el("span", { class: "cache", "data-cache-read": String(cache.read) },
          cache.model + ": cache read " + cache.read + ", write " + cache.written + ", in " + cache.uncached +
          (cache.usd === undefined ? "" : " · $" + cache.usd.toFixed(4)) +
          (cache.miss ? " · unread " + cache.miss.tokens + " (" + cache.miss.reason + ")" : "")));
      }
      return el("li", { "data-request": String(request.index), "data-prefix": request.prefix,
        "data-reused": String(request.reusedBytes), "data-new": String(request.newBytes) }, parts);
    }));
  }

  function problemItem(problem) {
    var where = problem.file + (problem.line === undefined ? "" : ":" + problem.line + ":" + ((problem.column || 0) + 1));
    return el("li", { class: "problem" }, [
      el("code", {}, where), " [" + problem.plugin + " " + problem.phase + (problem.key ? " " + problem.key : "") + "] ",
      problem.message,
      problem.lineText === undefined ? null : el("pre", {}, problem.lineText),
    ]);
  }

  function renderPlugins(plugins) {
    rows($("plugins"), plugins.map(function (plugin) {
      return el("tr", { "data-plugin": plugin.name, "data-generation": String(plugin.generation) }, [
        el("td", {}, plugin.name),
        el("td", {}, String(plugin.generation)),
        el("td", {}, el("code", {}, plugin.origin)),
        el("td", {}, plugin.files.map(function (file) { return el("div", {}, el("code", {}, file)); })),
        el("td", {}, plugin.keys.map(function (key) { return el("div", {}, el("code", {}, key)); })),
        el("td", {}, plugin.reloads.map(function (reload) {
          return el("div", {}, "gen " + reload.generation + " at " + when(reload.at) + (reload.ms === undefined ? "" : " (" + reload.ms + " ms)"));
        })),
        el("td", {}, plugin.problems.length === 0 ? "none" : el("ul", { class: "problems" }, plugin.problems.map(problemItem))),
      ]);
    }));
  }

  function renderMcp(servers) {
    $("no-mcp").hidden = servers.length > 0;
    var trs = [];
    servers.forEach(function (server) {
      var state = server.transport + ", " + server.state + (server.canSubscribe ? ", subscriptions" : "");
      if (server.instructionsKey !== undefined) {
        trs.push(el("tr", { "data-mcp-key": server.instructionsKey }, [
          el("td", {}, server.name), el("td", {}, state), el("td", {}, el("code", {}, server.instructionsKey)),
          el("td", {}, "instructions"), el("td", {}, ""), el("td", {}, ""),
        ]));
      }
      server.resources.forEach(function (resource) {
        trs.push(el("tr", { "data-mcp-key": resource.key }, [
          el("td", {}, server.name), el("td", {}, state), el("td", {}, el("code", {}, resource.key)),
          el("td", {}, el("code", {}, resource.uri)),
          el("td", {}, resource.state + (resource.isSubscribed ? ", subscribed" : "")),
          el("td", {}, String(resource.reads) + (resource.readMs === undefined ? "" : " (last " + resource.readMs.toFixed(1) + " ms)")),
        ]));
      });
    });
    rows($("mcp"), trs);
  }

  function renderProblems(problems) {
    $("no-problems").hidden = problems.length > 0;
    $("problems").replaceChildren.apply($("problems"), problems.map(problemItem));
  }

  async function refresh() {
    var state = await json("/api/state");
    var ids = state.sessions.map(function (s) { return s.id; });
    if (selected === null || ids.indexOf(selected) < 0) selected = ids.length > 0 ? ids[ids.length - 1] : null;
    var view = selected === null ? undefined : await json("/api/sessions/" + encodeURIComponent(selected));
    renderSessions(state.sessions);
    renderSession(view);
    renderPlugins(state.plugins);
    renderMcp(state.mcpServers || []);
    renderProblems(state.problems);
    revision += 1;
    document.body.dataset.revision = String(revision);
  }

  // Reads again once per burst of changes: a change during a read asks for one more read.
  function schedule() {
    if (running) { again = true; return; }
    running = true;
    refresh().catch(function (error) {
      $("status").textContent = "error: " + error.message;
      $("status").dataset.state = "offline";
    }).finally(function () {
      running = false;
      if (again) { again = false; schedule(); }
    });
  }

  var events = new EventSource("/events");
  events.addEventListener("open", function () {
    $("status").textContent = "live";
    $("status").dataset.state = "live";
    schedule();
  });
  events.addEventListener("change", schedule);
  events.addEventListener("error", function () {
    $("status").textContent = "disconnected, retrying…";
    $("status").dataset.state = "offline";
  });
})();
`;
