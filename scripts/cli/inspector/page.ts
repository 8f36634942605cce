// Owns the inspector's page: its HTML shell and stylesheet. They are TypeScript string
// modules so that they ship in the package with the compiled command line (the build
// emits only what `tsc` compiles; decision 080). The page's script is `page-script.ts`.
// No data is ever part of this markup: the script fills it in with `textContent`.

export const pageHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>context-host inspector</title>
<link rel="stylesheet" href="/inspector.css">
<script src="/inspector.js" defer></script>
</head>
<body>
<header>
  <h1>context-host <span class="muted">inspector</span></h1>
  <span id="status" class="status" data-state="connecting">connecting…</span>
</header>
<div class="layout">
  <nav aria-label="Sessions">
    <h2>Sessions</h2>
    <ul id="sessions" class="sessions"></ul>
    <p id="no-sessions" class="muted" data-state="loading">Loading…</p>
  </nav>
  <main>
    <section id="session" hidden>
      <h2 id="session-title"></h2>
      <p id="session-meta" class="muted"></p>
      <div class="columns">
        <div>
          <h3>Epochs</h3>
          <table id="epochs"><thead><tr><th>#</th><th>reason</th><th>began</th><th>Baseline</th></tr></thead><tbody></tbody></table>
          <h3>Baseline <span class="muted">(active epoch)</span></h3>
          <pre id="baseline" class="baseline"></pre>
          <h3>Snapshot</h3>
          <table id="snapshot"><thead><tr><th>key</th><th>value</th><th>admitted</th></tr></thead><tbody></tbody></table>
          <h3>Cached prefix per request <span class="legend"><i class="reused"></i>reused <i class="new"></i>new</span></h3>
          <ol id="requests" class="requests"></ol>
        </div>
        <div>
          <h3>Timeline</h3>
          <ol id="timeline" class="timeline"></ol>
        </div>
      </div>
    </section>
    <section id="plugins-section">
      <h2>Plugins</h2>
      <table id="plugins"><thead><tr><th>plugin</th><th>generation</th><th>from</th><th>files</th><th>keys</th><th>reloads</th><th>problems</th></tr></thead><tbody></tbody></table>
      <h2>MCP servers</h2>
      <table id="mcp"><thead><tr><th>server</th><th>state</th><th>source key</th><th>URI</th><th>resource</th><th>reads</th></tr></thead><tbody></tbody></table>
      <p id="no-mcp" class="muted">None configured.</p>
      <h2>Current problems</h2>
      <ul id="problems" class="problems"></ul>
      <p id="no-problems" class="muted">None.</p>
    </section>
  </main>
</div>
</body>
</html>
`;

export const pageCss = `:root {
  --fg: #1d2125; --muted: #6a737d; --line: #e1e4e8; --bg: #fff; --panel: #f6f8fa;
  --accent: #0b5cad; --update: #7a4d00; --update-bg: #fff6e0; --bad: #b42318; --reused: #2f8f5b; --new: #d97706;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
}
body { margin: 0; }
header { display: flex; align-items: baseline; gap: 1rem; padding: .6rem 1rem; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.1rem; margin: 0; }
h2 { font-size: 1rem; margin: 1rem 0 .4rem; }
h3 { font-size: .9rem; margin: 1rem 0 .3rem; }
.muted { color: var(--muted); font-weight: normal; }
.status { font-size: .8rem; padding: .1rem .5rem; border-radius: 1rem; background: var(--panel); }
.status[data-state="live"] { color: var(--reused); }
.status[data-state="offline"] { color: var(--bad); }
.layout { display: grid; grid-template-columns: 14rem 1fr; min-height: calc(100vh - 3rem); }
nav { border-right: 1px solid var(--line); padding: 0 .8rem; background: var(--panel); }
main { padding: 0 1rem 2rem; min-width: 0; }
.columns { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1.5rem; }
.sessions { list-style: none; padding: 0; margin: 0; }
.sessions button { width: 100%; text-align: left; border: 0; background: none; padding: .35rem .4rem; border-radius: 4px;
  cursor: pointer; font: inherit; color: inherit; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.sessions button[aria-current="true"] { background: #dbe9f7; color: var(--accent); }
table { border-collapse: collapse; width: 100%; font-size: .85rem; }
th, td { text-align: left; padding: .25rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
td code { word-break: break-all; }
#snapshot td:first-child code { word-break: normal; white-space: nowrap; }
pre { white-space: pre-wrap; word-break: break-word; margin: 0; }
.baseline { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: .5rem; max-height: 16rem; overflow: auto; }
.timeline { list-style: none; padding: 0; margin: 0; }
.timeline li { border-left: 3px solid var(--line); padding: .25rem .6rem; margin-bottom: .35rem; }
.timeline .role { font-size: .75rem; color: var(--muted); text-transform: uppercase; letter-spacing: .03em; }
.timeline li[data-role="user"] { border-color: var(--accent); }
.timeline li[data-role="assistant"] { border-color: var(--reused); }
.timeline li.system-update { border-color: var(--update); background: var(--update-bg); }
.timeline li.system-update summary { cursor: pointer; color: var(--update); font-weight: 600; }
.timeline .epoch-start { font-size: .75rem; color: var(--muted); border: 0; padding: .2rem 0; }
.requests { list-style: none; padding: 0; margin: 0; }
.requests li { display: grid; grid-template-columns: 14rem 1fr; align-items: center; gap: .5rem; font-size: .8rem; }
.requests svg { display: block; }
.requests .reused, .legend .reused { fill: var(--reused); background: var(--reused); }
.requests .new, .legend .new { fill: var(--new); background: var(--new); }
.requests li[data-prefix="break-within-epoch"] { color: var(--bad); }
.legend { font-size: .75rem; color: var(--muted); font-weight: normal; margin-left: .5rem; }
.legend i { display: inline-block; width: .7rem; height: .7rem; margin: 0 .2rem 0 .5rem; vertical-align: -1px; }
.value summary { cursor: pointer; }
.value pre { background: var(--panel); border: 1px solid var(--line); border-radius: 4px; padding: .3rem .5rem; margin-top: .2rem; max-height: 20rem; overflow: auto; }
.problems { padding-left: 1.2rem; }
.problem { color: var(--bad); }
.problem pre { color: var(--fg); }
`;
