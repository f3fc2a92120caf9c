// The multipart/form-data reader, on forms shaped the way the third party's Python client writes
// them (a JSON part "request", then binary "asset-N" parts) and on the ways a form can be broken.
import t from 'tap';
import { boundaryOf, isMultipart, MAX_PARTS, MultipartError, parseMultipart } from '../../src/api/multipart.js';

const B = '0f4e1d2c3b4a59687766554433221100';
const TYPE = `multipart/form-data; boundary=${B}`;
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x0d, 0x0a, 0x2d, 0x2d]);

function form(parts: { name: string; type?: string; filename?: string; data: Buffer | string }[], boundary = B): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"` + (p.filename ? `; filename="${p.filename}"` : '');
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`));
    chunks.push(Buffer.from(p.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

t.test("reads the client's form: JSON part first, binary parts byte for byte", async (t) => {
  const parts = parseMultipart(
    form([
      { name: 'request', type: 'application/json', data: '{"state":"x"}' },
      { name: 'asset-0', type: 'image/png', filename: 'asset-0', data: png },
    ]),
    TYPE,
  );
  t.same(
    parts.map((p) => p.name),
    ['request', 'asset-0'],
  );
  t.equal(parts[0]!.data.toString(), '{"state":"x"}');
  t.equal(parts[0]!.contentType, 'application/json');
  t.ok(parts[1]!.data.equals(png), 'CRLF and "--" inside binary data survive');
  t.equal(parts[1]!.filename, 'asset-0');
  t.equal(parts[1]!.contentType, 'image/png');
});

t.test('a quoted boundary, a preamble, and a part without Content-Type (text/plain)', async (t) => {
  const body = Buffer.concat([Buffer.from('ignored preamble\r\n'), form([{ name: 'a', data: 'hi' }], 'b b')]);
  const parts = parseMultipart(body, 'multipart/form-data; boundary="b b"');
  t.equal(parts[0]!.contentType, 'text/plain');
  t.equal(parts[0]!.data.toString(), 'hi');
});

t.test('content types and boundaries', async (t) => {
  t.ok(isMultipart('Multipart/Form-Data; boundary=x'));
  t.notOk(isMultipart('application/json'));
  t.notOk(isMultipart(undefined));
  t.equal(boundaryOf(TYPE), B);
  t.throws(() => boundaryOf('multipart/form-data'), MultipartError);
  t.throws(() => boundaryOf(`multipart/form-data; boundary=${'x'.repeat(71)}`), /1 to 70/);
});

t.test('broken forms are MultipartErrors that say what is wrong', async (t) => {
  const good = form([{ name: 'request', data: '{}' }]);
  const cases: [string, Buffer, RegExp][] = [
    ['no boundary in the body', Buffer.from('{"state":"x"}'), /never contains the boundary/],
    ['truncated', good.subarray(0, good.length - 12), /truncated/],
    ['no name', Buffer.from(`--${B}\r\nContent-Disposition: form-data\r\n\r\nx\r\n--${B}--\r\n`), /no name/],
    ['not form-data', Buffer.from(`--${B}\r\nContent-Disposition: attachment; name="a"\r\n\r\nx\r\n--${B}--\r\n`), /form-data/],
    [
      'duplicate names',
      form([
        { name: 'a', data: '1' },
        { name: 'a', data: '2' },
      ]),
      /more than one part is named "a"/,
    ],
    ['no parts', Buffer.from(`--${B}--\r\n`), /no parts/],
    ['headers never end', Buffer.from(`--${B}\r\nContent-Disposition: form-data; name="a"\r\n${'X-Pad: y\r\n'.repeat(1000)}`), /end of headers/],
  ];
  for (const [what, body, message] of cases) t.throws(() => parseMultipart(body, TYPE), message, what);
  const many = form(Array.from({ length: MAX_PARTS + 1 }, (_, i) => ({ name: `p${i}`, data: 'x' })));
  t.throws(() => parseMultipart(many, TYPE), new RegExp(`at most ${MAX_PARTS} parts`));
});
