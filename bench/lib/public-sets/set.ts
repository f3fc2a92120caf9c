// What the bench holds of a public labelled set: where its published file comes from, that file's
// checksum, and how its items become labelled cases. The data itself stays out of the repository: a
// developer brings the file into data/public/<name>/ (git-ignored), and the bench reads it there.
import type { LabelledCase } from '../cases.js';

/** A file as its upstream publishes it. */
export interface SetFile {
  name: string;
  /** Only dev and train splits are read, so that nothing is tuned on what it is judged by. */
  split: 'dev' | 'train';
  /** Where the file is published: repository and path, or archive and member. */
  source: string;
  /** Of the file as published; null while nobody has checked one, and then the bench refuses it. */
  sha256: string | null;
  bytes: number | null;
}

/** An item as a case without its id and domain, which the bench gives from the set and the item's place in the file. */
export type Item = Omit<LabelledCase, 'id' | 'domain'>;

export interface PublicSet {
  /** The folder under data/public, and the prefix of its case ids. */
  name: string;
  title: string;
  citation: string;
  /** In order of preference, for a folder that holds more than one. */
  files: readonly SetFile[];
  /** Every item of the file, in the file's order; a line that does not parse is an error naming it. */
  read(text: string): Item[];
}
