// Decision bodies of known sizes for the load benches. Every body carries a reference number in its
// state, as real traffic does, so a bench measures scoring rather than the prefix cache.

export type Size = 'small' | 'medium' | 'large';

const SHORT = 'Order 5521: the customer says the parcel arrived late and the box was dented, but the lamp inside works.';

const TICKET =
  'Support ticket from Ghent. "Good morning, I bought a standing desk from your shop three weeks ago. The motor on the left leg ' +
  'stopped working after two days and the desk now tilts when I raise it. I sent two emails and used the chat once, and nobody ' +
  'has answered. I work from home and need the desk every day, so I want a technician to come by this week or a full refund ' +
  'including the delivery fee. I also saw that the same desk is now cheaper on your site, which I find frustrating. Please ' +
  'reply before Thursday, otherwise I will file a complaint with the consumer office. Best regards, Ines."';

const TOPICS = [
  'a refund',
  'a replacement',
  'a technician',
  'a deadline',
  'a delivery fee',
  'a price drop',
  'a complaint',
  'a broken motor',
  'an email',
  'a chat',
  'a phone call',
  'a store visit',
  'a warranty',
  'a discount',
  'a voucher',
  'a cancellation',
  'a late parcel',
  'a missing part',
  'a wrong colour',
  'an invoice',
  'a payment',
  'a bank transfer',
  'a gift',
  'a subscription',
  'a password',
  'an account',
  'a newsletter',
  'a review',
  'a lawyer',
  'the consumer office',
  'working from home',
  'a weekend',
  'a child',
  'a pet',
  'a holiday',
  'a birthday',
  'an allergy',
  'a recipe',
  'the weather',
  'a football match',
  'a train',
  'a hotel',
  'a doctor',
  'a school',
  'a neighbour',
  'a car',
  'a bicycle',
  'a garden',
  'a laptop',
  'a printer',
];

/** `n` yes/no questions, each with its own instructions (so every branch has its own suffix). */
export function yesNoQuestions(n: number): Record<string, { type: 'noul'; instructions: string }> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [
      `q${i}`,
      { type: 'noul' as const, instructions: `Does the message mention ${TOPICS[i % TOPICS.length]}${i < TOPICS.length ? '' : ` (check ${i})`}?` },
    ]),
  );
}

const MEDIUM_QUESTIONS = {
  intent: { type: 'choice', instructions: 'What does the customer want first?', criteria: ['repair visit', 'refund', 'replacement', 'information'] },
  tone: { type: 'choice', instructions: 'How does the customer sound?', criteria: ['angry', 'annoyed', 'neutral', 'pleased'] },
  channel: { type: 'choice', instructions: 'Which channel did the customer already try?', criteria: ['email', 'phone', 'letter', 'store'] },
  priority: { type: 'choice', instructions: 'How urgently should support handle this?', criteria: ['low', 'normal', 'high', 'critical'] },
};

/** small: 1 yes/no on a short state; medium: 4 choices × 4 permute passes on a ticket; large: `largeQuestions` yes/no on the ticket. */
export function decisionBody(size: Size, ref: number, largeQuestions = 50): Record<string, unknown> {
  if (size === 'small') return { state: `${SHORT} (ref ${ref})`, questions: { late: { type: 'noul', instructions: 'Did the parcel arrive late?' } } };
  if (size === 'medium') return { state: `${TICKET} (ref ${ref})`, questions: MEDIUM_QUESTIONS, options: { debias: 'permute', debias_passes: 4 } };
  return { state: `${TICKET} (ref ${ref})`, questions: yesNoQuestions(largeQuestions) };
}

/** The body of README's `curl … -d '…'` example, so that a bench sends what README shows. */
export function readmeExample(readme: string): { state: string } & Record<string, unknown> {
  const m = /-d '(\{[\s\S]*?\})'\n/.exec(readme);
  if (!m) throw new Error("README.md has no `curl ... -d '{...}'` example");
  return JSON.parse(m[1]!) as { state: string } & Record<string, unknown>;
}
