//! The style sheet every report page of the tool inlines (the suite's and the co-run's), so
//! the pages look alike and each stays one self-contained file.

pub(crate) const CSS: &str = r#"
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: #222; background: #f6f7f9; max-width: 1180px; margin: 24px auto; padding: 0 20px; }
h1 { font-size: 26px; margin: 0 0 6px; }
h2 { font-size: 20px; margin: 0 0 10px; }
h2 small { font-weight: normal; color: #666; font-size: 14px; }
h3 { font-size: 16px; margin: 14px 0 4px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 16px 18px;
  margin: 18px 0; }
.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 10px 0;
  font-size: 14px; }
.meta dt { color: #666; }
.meta dd { margin: 0; }
code { font: 13px ui-monospace, "DejaVu Sans Mono", monospace; background: #eef0f3;
  padding: 1px 5px; border-radius: 4px; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; margin-bottom: 12px; }
.charts figure { margin: 0; overflow-x: auto; max-width: 100%; }
.charts svg { border: 1px solid #e3e6ea; border-radius: 6px; display: block; }
.note { color: #555; font-size: 14px; margin: 6px 0; }
.result { font-size: 14px; margin: 0 0 10px; }
table { border-collapse: collapse; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eceef1; text-align: left;
  vertical-align: top; }
th { background: #f2f4f7; font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.stopped td { color: #8a6100; }
tr.failed td { color: #b3001b; font-weight: 600; }
td.msg { color: #666; max-width: 420px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; align-items: stretch; margin: 8px 0; }
.cards-label { flex: 0 0 84px; font-weight: 600; padding-top: 10px; }
.card { flex: 1 1 0; border: 1px solid #d4d8de; border-radius: 8px; padding: 8px 12px;
  min-width: 150px; max-width: 240px; font-size: 13px; }
.card .peer { color: #444; font-weight: 600; }
.card .big { font-size: 28px; font-weight: 700; line-height: 1.15; }
.card .behind { color: #555; font-size: 12px; margin-top: 4px; }
table.grid td, table.grid th { padding: 2px 8px; }
table.grid .group { border-left: 2px solid #c9ced6; }
table.grid th.group { text-align: center; }
table.grid td.miss { color: #8a6100; }
"#;
