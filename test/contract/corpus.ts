/**
 * A small labelled corpus for ranking sanity: one topic per document, paraphrased queries that share
 * (almost) no words with their document (semantic and hybrid must still put it first), and exact-term
 * queries for keyword mode. Written for these tests; each document is under one chunk.
 */
export interface CorpusDocument {
  key: string;
  url: string;
  title: string;
  content: string;
}

export const CORPUS: CorpusDocument[] = [
  {
    key: "password",
    url: "https://help.example.com/account/reset-password",
    title: "Resetting your password",
    content:
      "If you forgot your password, open the sign-in page and choose 'Forgot password'. We email you a reset link that stays valid for one hour. Follow the link, pick a new password of at least twelve characters and sign in again. Reset links can be used once.",
  },
  {
    key: "refund",
    url: "https://help.example.com/billing/refunds",
    title: "Refund policy",
    content:
      "Purchases can be refunded within thirty days. Contact billing support with your invoice number and the refund is issued to the original payment card within five to ten business days. Annual plans are refunded pro rata after the first month.",
  },
  {
    key: "shipping",
    url: "https://help.example.com/orders/shipping-times",
    title: "Delivery times",
    content:
      "Parcels leave our warehouse within two business days. Standard delivery takes three to five days inside the country and up to three weeks abroad. Every parcel has a tracking number that the courier updates as it travels.",
  },
  {
    key: "photosynthesis",
    url: "https://science.example.org/biology/photosynthesis",
    title: "Photosynthesis",
    content:
      "Plants, algae and some bacteria turn sunlight, water and carbon dioxide into glucose and oxygen. Chlorophyll in the chloroplasts absorbs light, mostly red and blue, which is why leaves look green.",
  },
  {
    key: "volcano",
    url: "https://science.example.org/geology/volcanoes",
    title: "Volcanic eruptions",
    content:
      "Magma rises through cracks in the crust and erupts as lava, ash and gas. Explosive eruptions happen when gas-rich, sticky magma traps pressure until it bursts. Stratovolcanoes such as Mount Fuji are built from layers of hardened lava and ash.",
  },
  {
    key: "sourdough",
    url: "https://kitchen.example.net/bread/sourdough",
    title: "Baking sourdough bread",
    content:
      "Feed the starter the evening before, mix flour, water, salt and levain, then let the dough ferment for several hours with a few folds. Shape the loaf, proof it overnight in the fridge and bake it in a covered cast-iron pot at high heat.",
  },
  {
    key: "marathon",
    url: "https://sport.example.net/running/marathon-training",
    title: "Marathon training plan",
    content:
      "Build weekly mileage slowly over sixteen weeks, with one long run every weekend that grows to about thirty-two kilometres. Add easy recovery runs, one tempo session a week, and taper for the last two weeks before the race.",
  },
  {
    key: "vpn",
    url: "https://it.example.com/network/vpn-setup",
    title: "Connecting to the office VPN",
    content:
      "Install the WireGuard client, import the configuration file from the IT portal and activate the tunnel. The VPN is required to reach internal wikis and file shares from home. Contact the helpdesk if the handshake fails.",
  },
  {
    key: "vacation",
    url: "https://hr.example.com/policies/annual-leave",
    title: "Annual leave",
    content:
      "Employees receive twenty-five days of paid holiday per calendar year. Requests go through the HR system at least two weeks in advance and need the approval of your manager. Up to five unused days carry over to the next year.",
  },
  {
    key: "coffee",
    url: "https://kitchen.example.net/drinks/espresso",
    title: "Pulling an espresso shot",
    content:
      "Grind eighteen grams of beans finely, tamp evenly and extract about thirty-six grams of coffee in twenty-five to thirty seconds. A sour shot needs a finer grind, a bitter one a coarser grind.",
  },
];

/** Paraphrases: almost no words in common with the relevant document. */
export const PARAPHRASE_QUERIES: { query: string; relevant: string }[] = [
  { query: "I can't remember my login credentials, how do I get back in?", relevant: "password" },
  { query: "how do I get my money back for an order", relevant: "refund" },
  { query: "how many days until my package arrives", relevant: "shipping" },
  { query: "how do green plants make food from light", relevant: "photosynthesis" },
  { query: "why do mountains explode with molten rock", relevant: "volcano" },
  { query: "getting ready to run 42 km", relevant: "marathon" },
  { query: "how many days off do staff get each year", relevant: "vacation" },
];

/** Exact terms that occur in exactly one document. */
export const KEYWORD_QUERIES: { query: string; relevant: string }[] = [
  { query: "WireGuard", relevant: "vpn" },
  { query: "chlorophyll", relevant: "photosynthesis" },
  { query: "levain starter", relevant: "sourdough" },
  { query: "invoice number", relevant: "refund" },
  { query: "tamp grind", relevant: "coffee" },
];
