// The console's one script: the key typed once per tab (sessionStorage, never a cookie), sent
// as a bearer token with every htmx request; error answers shown where the answer would go.
"use strict";

const KEY = "hazmat-key";

function signedIn(key) {
  document.getElementById("signin").hidden = true;
  document.getElementById("nav").hidden = false;
  document.getElementById("signout").hidden = false;
  htmx.ajax("GET", "/console/f/whoami", "#who");
  htmx.ajax("GET", "/console/f/runs", "#main");
}

function signOut() {
  sessionStorage.removeItem(KEY);
  document.getElementById("signin").hidden = false;
  document.getElementById("nav").hidden = true;
  document.getElementById("signout").hidden = true;
  for (const id of ["who", "main", "detail"]) document.getElementById(id).replaceChildren();
}

document.addEventListener("htmx:configRequest", (event) => {
  const key = sessionStorage.getItem(KEY);
  if (key) event.detail.headers["Authorization"] = "Bearer " + key;
});

document.addEventListener("htmx:beforeSwap", (event) => {
  const status = event.detail.xhr.status;
  if (status >= 400) {  // the console's errors are fragments too: show them
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  }
  if (status === 401) signOut();
});

// a chart fragment carries its columns (time first) in data-columns; uPlot draws it here
const COLORS = ["#0969da", "#d4760a", "#1a7f37", "#c0392b", "#8250df", "#57606a", "#bf3989"];

function drawCharts() {
  for (const el of document.querySelectorAll(".chart:not([data-drawn])")) {
    const data = JSON.parse(el.dataset.columns);
    const names = Object.keys(data.series);
    const series = names.map((name, i) => ({
      label: name, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true, size: 5 },
    }));
    const options = { width: 340, height: 200, series: [{}, ...series], scales: { x: { time: true } } };
    new uPlot(options, [data.x, ...names.map((name) => data.series[name])], el);
    el.dataset.drawn = "1";
  }
}

document.addEventListener("htmx:afterSettle", drawCharts);

// a receipt's file, chosen or dropped on the audit page's text box, is read into it
function readReceipt(file) {
  if (file) file.text().then((text) => { document.getElementById("receipt-text").value = text; });
}

document.addEventListener("change", (event) => {
  if (event.target.id === "receipt-file") readReceipt(event.target.files[0]);
});
document.addEventListener("dragover", (event) => {
  if (event.target.id === "receipt-text") event.preventDefault();
});
document.addEventListener("drop", (event) => {
  if (event.target.id !== "receipt-text") return;
  event.preventDefault();
  readReceipt(event.dataTransfer.files[0]);
});

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("signin").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("key");
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    signedIn();
  });
  document.getElementById("signout").addEventListener("click", signOut);
  for (const link of document.querySelectorAll("nav a")) {
    link.addEventListener("click", (event) => event.preventDefault());
  }
  if (sessionStorage.getItem(KEY)) signedIn();
});
