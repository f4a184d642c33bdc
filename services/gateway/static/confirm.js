// Forms with data-confirm ask before they post. The question is read from the
// attribute as text (never run as script), so a queue or user name with
// quotes in it is shown, not executed.
document.addEventListener("submit", (event) => {
  const question = event.target.getAttribute && event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) event.preventDefault();
}, true);
