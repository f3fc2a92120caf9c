export interface Edge {
  from: string;
  to: string;
}

export function importsOf(root: string, files: string[]): Edge[];
