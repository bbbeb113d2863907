// Draws every plot of the page: each <div class="plot" data-figure="ID"> takes its figure
// from the JSON in <script type="application/json" id="ID"> (data, never code).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("div.plot[data-figure]").forEach(function (div) {
    var fig = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    Plotly.newPlot(div, fig.data, fig.layout, {displaylogo: false, responsive: true});
  });
});
