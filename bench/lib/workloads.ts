// The two decision workloads bench:api and bench:breakdown send: a ticket as the state, with
// (a) four choice questions debiased over four passes and (b) one yes/no question.

export const TICKET =
  'Ticket #4471 from a customer in Lyon. "Hello, I ordered the blue winter jacket (size M) on the 3rd and paid with my credit card. ' +
  'The parcel arrived yesterday but the box was torn open, the jacket has a broken zip and there is a stain on the left sleeve. ' +
  'I had planned to wear it for a trip next week, so I am quite annoyed. I already tried to call your hotline twice and waited ' +
  'more than twenty minutes each time without reaching anyone. I would like either a replacement that arrives before Friday or ' +
  'my money back. Please also tell me whether I need to send the damaged jacket back and who pays for the return shipping. ' +
  'I have been a customer for six years and this is the first time something like this has happened. Regards, Camille."';

export const WORKLOADS = {
  a: {
    name: '4 choice questions x 4 options, debias permute, 4 passes',
    body: {
      model: 'jev-latest',
      state: TICKET,
      questions: {
        intent: {
          type: 'choice',
          instructions: 'What does the customer want the company to do first, judging only from the message itself?',
          criteria: ['replacement', 'refund', 'repair', 'information'],
        },
        sentiment: {
          type: 'choice',
          instructions: 'Which word best describes the overall emotional tone of the customer message as written?',
          criteria: ['angry', 'annoyed', 'neutral', 'pleased'],
        },
        channel: {
          type: 'choice',
          instructions: 'Through which channel did the customer say they already tried to reach the company before writing?',
          criteria: ['email', 'phone', 'chat', 'store'],
        },
        priority: {
          type: 'choice',
          instructions: 'How urgently should the support team handle this ticket, given the deadline the customer mentions?',
          criteria: ['low', 'normal', 'high', 'critical'],
        },
      },
      options: { debias: 'permute', debias_passes: 4 },
    },
  },
  b: {
    name: 'one noul question',
    body: { model: 'jev-latest', state: TICKET, questions: { refund: { type: 'noul', instructions: 'Does the customer accept a refund?' } } },
  },
} as const;
export type Workload = keyof typeof WORKLOADS;
export const WORKLOAD_NAMES = Object.keys(WORKLOADS) as Workload[];
