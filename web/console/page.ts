/** What the router mounts for a route: its section, and how to stop its timers and observers. */
export interface Page {
  element: HTMLElement;
  /** The element that takes focus when the user navigates to the page. */
  heading: HTMLElement;
  unmount?(): void;
}
