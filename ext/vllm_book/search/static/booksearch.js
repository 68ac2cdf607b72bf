/* The query side of the book search (index side: ext/vllm_book/search/tokens.py and index.py).
 *
 * Loaded with `defer` on search.html only, after Sphinx's searchtools.js: it replaces
 * Search._performSearch with BM25F ranking over booksearch-index.js, keeping Sphinx's page, result list
 * and summaries.  A Latin query is cut exactly as the index was (same expressions, same Snowball stemmer);
 * a Chinese run is cut by forward maximum matching against the index's jieba words.  Unknown Latin terms
 * fall back to the closest indexed terms (edit distance 1, or 2 for long words), then to prefixes.
 */
"use strict";
const BookSearch = (() => {
  const CJK = "\\u3400-\\u4dbf\\u4e00-\\u9fff\\uf900-\\ufaff";
  const PIECE = new RegExp(`[${CJK}]+|[A-Za-z0-9][A-Za-z0-9_.\\-]*`, "gu");
  const CJK_ONLY = new RegExp(`^[${CJK}]+$`, "u");
  const SEP = /[._-]+/;
  const CAMEL = /[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+/g;
  const NORM = new RegExp(`[^0-9a-z${CJK}]+`, "gu");
  const K1 = 1.2;
  const TITLE_BOOST = 30, SECTION_BOOST = 15;
  const W = {exact: 1, fuzzy: 0.7, prefix: 0.5, part: 0.4, sub: 0.3};

  let index = null, stemmer = null, latinVocab = [], maxCjk = 2;
  const waiting = [];

  const normalize = (text) => text.toLowerCase().replace(NORM, "");

  const latinTerms = (word) => {
    word = word.replace(/^[._-]+|[._-]+$/g, "");
    if (!word) return [];
    const parts = word.split(SEP).flatMap((chunk) => chunk.match(CAMEL) || []);
    const out = parts.length > 1 ? [word.toLowerCase()] : [];
    const dotted = word.split(".").filter((c) => c);
    if (dotted.length > 1)
      out.push(...dotted.filter((c) => c.split(SEP).length > 1 || (c.match(CAMEL) || []).length > 1).map((c) => c.toLowerCase()));
    for (const part of parts) {
      const low = part.toLowerCase();
      if (low.length < 2 || /^[0-9]+$/.test(low) || BookSearchStopwords.has(low)) continue;
      out.push(stemmer.stemWord(low));
    }
    return out;
  };

  /** Chinese run → words of the index, longest first from the left (forward maximum matching). */
  const cjkTerms = (run) => {
    const out = [];
    let i = 0;
    while (i < run.length) {
      let j = Math.min(run.length, i + maxCjk);
      while (j > i + 1 && !(run.slice(i, j) in index.terms)) j--;
      if (j > i + 1) { out.push(run.slice(i, j)); i = j; } else i++;
    }
    return out;
  };

  /** The terms of *text* as the index would have them (Latin side; used by the tests). */
  const tokenize = (text) => {
    const out = [];
    for (const m of text.matchAll(PIECE)) {
      if (CJK_ONLY.test(m[0])) out.push(...cjkTerms(m[0]));
      else out.push(...latinTerms(m[0]));
    }
    return out;
  };

  const distance = (a, b, max) => {  // Damerau-Levenshtein (optimal string alignment), cut off above max
    if (Math.abs(a.length - b.length) > max) return max + 1;
    let prev2 = null, prev = Array.from({length: b.length + 1}, (_, k) => k);
    for (let i = 1; i <= a.length; i++) {
      const cur = [i];
      let best = i;
      for (let j = 1; j <= b.length; j++) {
        let d = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (prev2 && i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, prev2[j - 2] + 1);
        cur.push(d);
        best = Math.min(best, d);
      }
      if (best > max) return max + 1;
      prev2 = prev; prev = cur;
    }
    return prev[b.length];
  };

  /** Forms a query term is looked up by: the term itself, else its closest indexed terms, else prefixes. */
  const forms = (term) => {
    if (term in index.terms) return [[term, W.exact]];
    if (CJK_ONLY.test(term) || term.length < 4) return [];
    const max = term.length >= 8 ? 2 : 1;
    let best = max + 1, near = [];
    for (const cand of latinVocab) {
      const d = distance(term, cand, max);
      if (d < best) { best = d; near = [cand]; } else if (d === best && d <= max) near.push(cand);
    }
    if (near.length && best <= max) return near.slice(0, 8).map((t) => [t, W.fuzzy]);
    return latinVocab.filter((t) => t.startsWith(term)).slice(0, 30).map((t) => [t, W.prefix]);
  };

  /** Query → [{forms: [[term, weight]], extra: [[term, weight]]}], one entry per word the reader typed. */
  const parse = (query) => {
    const wanted = [];
    for (const m of query.matchAll(PIECE)) {
      if (CJK_ONLY.test(m[0])) {
        for (const word of cjkTerms(m[0])) {
          const subs = new Set();
          for (let n = 2; n <= 3 && n < word.length; n++)
            for (let i = 0; i + n <= word.length; i++) if (word.slice(i, i + n) in index.terms) subs.add(word.slice(i, i + n));
          wanted.push({forms: [[word, W.exact]], extra: [...subs].map((t) => [t, W.sub])});
        }
      } else {
        const terms = latinTerms(m[0]);
        if (!terms.length) continue;
        if (terms.length === 1) { wanted.push({forms: forms(terms[0]), extra: []}); continue; }
        // a compound: the whole identifier, with its parts as weaker evidence
        wanted.push({forms: forms(terms[0]), extra: terms.slice(1).flatMap((t) => forms(t).map(([f, w]) => [f, w * W.part]))});
      }
    }
    return wanted;
  };

  const postings = (term) => {
    const flat = index.terms[term], out = new Map();
    const idf = Math.log(1 + (index.docs.length - flat.length / 2 + 0.5) / (flat.length / 2 + 0.5));
    for (let k = 0; k < flat.length; k += 2) {
      const tf = flat[k + 1] / 10;
      out.set(flat[k], idf * tf * (K1 + 1) / (tf + K1));
    }
    return out;
  };

  /** The query and its rewrites by the book's synonym groups, with the weight each result counts with. */
  const variants = (query) => {
    const out = [[query, 1]], low = query.toLowerCase();
    for (const group of index.synonyms || [])
      for (const word of group) {
        const w = word.toLowerCase();
        if (!low.includes(w)) continue;
        for (const other of group) if (other !== word) out.push([low.split(w).join(` ${other} `), 0.9]);
      }
    return out.slice(0, 8);
  };

  /** Ranked [docIndex, score, anchor, sectionTitle] for *query* and its synonym rewrites, best first. */
  const rank = (query) => {
    const merged = new Map();
    for (const [q, weight] of variants(query))
      for (const r of rankOne(q)) {
        const s = r[1] * weight;
        if (!merged.has(r[0]) || merged.get(r[0])[1] < s) merged.set(r[0], [r[0], s, r[2], r[3]]);
      }
    return [...merged.values()]
      .sort((a, b) => b[1] - a[1] || index.docs[a[0]][1].localeCompare(index.docs[b[0]][1]));
  };

  const rankOne = (query) => {
    const wanted = parse(query), scores = new Map(), covered = new Map();
    const cache = new Map();
    const post = (t) => { if (!cache.has(t)) cache.set(t, postings(t)); return cache.get(t); };
    for (const want of wanted) {
      const best = new Map(), partial = new Map();
      for (const [term, weight] of want.forms)
        for (const [doc, s] of post(term)) best.set(doc, Math.max(best.get(doc) || 0, weight * s));
      for (const [term, weight] of want.extra)
        for (const [doc, s] of post(term)) partial.set(doc, (partial.get(doc) || 0) + weight * s);
      for (const doc of new Set([...best.keys(), ...partial.keys()])) {
        scores.set(doc, (scores.get(doc) || 0) + (best.get(doc) || 0) + (partial.get(doc) || 0));
        covered.set(doc, (covered.get(doc) || 0) + (best.has(doc) ? 1 : 0.5));
      }
    }
    const nq = normalize(query), results = new Map();
    for (const [doc, s] of scores) {
      const c = wanted.length ? covered.get(doc) / wanted.length : 0;
      results.set(doc, [doc, s * c * c, "", ""]);
    }
    if (nq.length >= 2) {
      index.docs.forEach(([, title], doc) => {
        const nt = normalize(title);
        if (nt.includes(nq)) {
          const r = results.get(doc) || [doc, 0, "", ""];
          r[1] += TITLE_BOOST * (0.5 + 0.5 * nq.length / nt.length);
          results.set(doc, r);
        }
      });
      const sectionBest = new Map();
      for (const [doc, anchor, title] of index.sections) {
        const ns = normalize(title);
        if (!ns.includes(nq)) continue;
        const b = SECTION_BOOST * (0.5 + 0.5 * nq.length / ns.length);
        if (!sectionBest.has(doc) || sectionBest.get(doc)[0] < b) sectionBest.set(doc, [b, anchor, title]);
      }
      for (const [doc, [b, anchor, title]] of sectionBest) {
        const r = results.get(doc) || [doc, 0, "", ""];
        r[1] += b; r[2] = anchor; r[3] = title;
        results.set(doc, r);
      }
    }
    return [...results.values()].filter((r) => r[1] > 0)
      .sort((a, b) => b[1] - a[1] || index.docs[a[0]][1].localeCompare(index.docs[b[0]][1]));
  };

  /** Sphinx's result tuples [docname, title, anchor, descr, score, filename, kind], worst first. */
  const performSearch = (query) => {
    const out = rank(query).slice(0, 50).map(([doc, score, anchor, section]) => {
      const [docname, title] = index.docs[doc];
      return [docname, section ? `${title} > ${section}` : title, anchor ? `#${anchor}` : "", null,
              Math.round(score * 100) / 100, docname, section ? "title" : "text"];
    });
    return out.reverse();
  };

  const setIndex = (data) => {
    index = data;
    stemmer = new BookSearchStemmer();
    latinVocab = Object.keys(index.terms).filter((t) => /^[a-z0-9]/.test(t) && t.length >= 3);
    maxCjk = Math.max(2, ...Object.keys(index.terms).filter((t) => CJK_ONLY.test(t)).map((t) => t.length));
    maxCjk = Math.min(maxCjk, 12);
    if (typeof Search !== "undefined") Search._performSearch = (query) => performSearch(query);
    waiting.splice(0).forEach((f) => f());
  };

  const ready = () => new Promise((resolve) => (index ? resolve() : waiting.push(resolve)));

  return {setIndex, ready, tokenize, parse: (q) => parse(q), rank: (q) => rank(q), performSearch, normalize};
})();
