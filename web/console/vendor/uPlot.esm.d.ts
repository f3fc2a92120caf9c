// The browser loads uPlot from ./vendor/uPlot.esm.js, which scripts/build-web.mjs copies from the
// pinned npm package; its types are the package's own.
import uPlot from 'uplot';
export default uPlot;
