// AG News: news articles in four topics, as the CSV of ag_news_csv: no header, one article a row,
// `"3","Title","Description"`, the class 1 to 4 (World, Sports, Business, Sci/Tech), quotes inside a
// field doubled. The published text has two artefacts of its making: a backslash where the source
// had a line break (`Carlyle Group,\which has`), which the bench reads as a space, and HTML
// entities that lost their ampersand (`Google #39;s`, `#36;40`), which it leaves as published:
// undoing them means guessing at the spaces around them.
import type { Item, PublicSet } from './set.js';

const TOPICS = {
  World: 'world news, politics, international affairs',
  Sports: 'sports',
  Business: 'business, economy, companies, markets',
  'Sci/Tech': 'science and technology',
};
const LABELS = Object.keys(TOPICS);

/** The rows of a CSV whose fields may be quoted, with "" for a quote and line breaks inside quotes. */
export function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') field += text[++i];
      else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      [row, field] = [[], ''];
    } else field += c;
  }
  if (field !== '' || row.length > 0) rows.push([...row, field]);
  return rows.filter((r) => r.length > 1 || r[0] !== '');
}

const unbreak = (s: string) => s.replace(/ *\\+ */g, ' ').trim();

export function readRows(text: string): Item[] {
  return csvRows(text).map((r, i) => {
    const label = LABELS[Number(r[0]) - 1];
    if (r.length !== 3 || label === undefined || !/^\d$/.test(r[0]!)) throw new Error(`agnews row ${i + 1}: not "class","title","description"`);
    return {
      state: `${unbreak(r[1]!)}\n${unbreak(r[2]!)}`,
      questions: { topic: { type: 'choice', instructions: 'What is the topic of this news article?', criteria: TOPICS } },
      truth: { topic: label },
    };
  });
}

export const agnews: PublicSet = {
  name: 'agnews',
  title: 'AG News, four news topics',
  citation: 'Zhang, Zhao and LeCun 2015, "Character-level Convolutional Networks for Text Classification", NeurIPS',
  files: [
    {
      name: 'train.csv',
      split: 'train',
      source: 'ag_news_csv.tgz of Zhang et al. 2015, member ag_news_csv/train.csv (a copy: github.com/mhjabreel/CharCnn_Keras, data/ag_news_csv/train.csv)',
      sha256: null,
      bytes: null,
    },
  ],
  read: readRows,
};
