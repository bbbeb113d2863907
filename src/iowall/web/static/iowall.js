// Draws every plot of the page: each <div class="plot" data-figure="ID"> takes its figure
// from the JSON in <script type="application/json" id="ID"> (data, never code). A click on a
// point whose customdata is a path of this server opens it; a click on the heading of a
// table.sortable sorts its rows (by data-sort when a cell has one, numbers as numbers).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  if (typeof Plotly !== "undefined") {
    document.querySelectorAll("div.plot[data-figure]").forEach(function (div) {
      var fig = JSON.parse(document.getElementById(div.dataset.figure).textContent);
      Plotly.newPlot(div, fig.data, fig.layout, {displaylogo: false, responsive: true});
      div.on("plotly_click", function (ev) {
        var url = ev.points.length ? ev.points[0].customdata : null;
        if (typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/") {
          window.location.assign(url);
        }
      });
    });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("thead th").forEach(function (th, col) {
      th.classList.add("sort");
      th.addEventListener("click", function () { sortBy(table, th, col); });
    });
  });
});

function sortKey(td) {
  var raw = td.dataset.sort !== undefined ? td.dataset.sort : td.textContent.trim();
  var n = Number(raw);
  return raw !== "" && !isNaN(n) ? n : raw.toLowerCase();
}

function sortBy(table, th, col) {
  var body = table.tBodies[0];
  var down = th.dataset.dir !== "desc";
  table.querySelectorAll("thead th").forEach(function (h) { delete h.dataset.dir; });
  th.dataset.dir = down ? "desc" : "asc";
  var rows = Array.prototype.slice.call(body.rows).filter(function (r) { return r.cells.length > col; });
  rows.sort(function (a, b) {
    var x = sortKey(a.cells[col]), y = sortKey(b.cells[col]);
    if (typeof x !== typeof y) { x = String(x); y = String(y); }
    return (x < y ? -1 : x > y ? 1 : 0) * (down ? -1 : 1);
  });
  rows.forEach(function (r) { body.appendChild(r); });
}
