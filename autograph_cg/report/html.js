"use strict";
(function () {
  const tree = document.getElementById("tree");
  if (!tree) {
    return;
  }
  const nodes = () => Array.from(tree.querySelectorAll("details.node"));
  const setOpen = (open) => nodes().forEach((d) => { d.open = open; });
  document.getElementById("expand-all").addEventListener("click", () => setOpen(true));
  document.getElementById("collapse-all").addEventListener("click", () => setOpen(false));

  const search = document.getElementById("search");
  const count = document.getElementById("search-count");
  search.addEventListener("input", () => {
    const term = search.value.trim().toLowerCase();
    let hits = 0;
    tree.querySelectorAll(".match").forEach((el) => el.classList.remove("match"));
    if (term) {
      tree.querySelectorAll("[data-name]").forEach((el) => {
        if (!el.dataset.name.toLowerCase().includes(term)) {
          return;
        }
        hits += 1;
        el.classList.add("match");
        for (let up = el.parentElement; up && up !== tree; up = up.parentElement) {
          if (up.tagName === "DETAILS") {
            up.open = true;
          }
        }
      });
    }
    count.textContent = term ? hits + " match" + (hits === 1 ? "" : "es") : "";
  });
})();
