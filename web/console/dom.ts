// A tiny element builder. Text only ever enters the page as text nodes or attribute values, never as
// markup, so names, emails and messages from users or the API cannot inject anything; and the
// console's CSP forbids inline scripts and style attributes, which this never writes.
export type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value);
      else el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

let counter = 0;
/** An id unique in this page, for pairing repeated controls with their labels. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

/** A control with its visible label; the control must carry an id. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLDivElement {
  let note: HTMLParagraphElement | null = null;
  if (hint) {
    note = h('p', { class: 'hint', id: `${control.id}-hint` }, hint);
    control.setAttribute('aria-describedby', note.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), note, control);
}

/** A table that scrolls sideways on a narrow screen instead of widening the page. */
export function scrolling(table: HTMLTableElement): HTMLDivElement {
  return h('div', { class: 'table-scroll' }, table);
}

/** Copies `text`; when the clipboard is refused, selects `target` so the user can copy it by hand. */
export async function copyText(text: string, target: HTMLElement, status: HTMLElement): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = 'Copied.';
  } catch {
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    status.textContent = 'Copying was blocked by the browser; the text is selected, press Ctrl+C (⌘C on a Mac) to copy it.';
  }
}
