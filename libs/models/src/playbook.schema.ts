import { Type, type Static } from 'typebox';

/** A hint descriptor: an optional parameter of a playbook. */
export const HintDescriptorSchema = Type.Object({
  id: Type.String(),
  description: Type.String(),
  type: Type.String(),
  values: Type.Array(Type.Unknown()),
  default_value: Type.Unknown(),
});
export type HintDescriptor = Static<typeof HintDescriptorSchema>;

/** A playbook descriptor (element of `GET /v1/playbook/`). */
export const PlaybookDescriptorSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  required_server_list: Type.Boolean(),
  hints: Type.Array(HintDescriptorSchema),
});
export type PlaybookDescriptor = Static<typeof PlaybookDescriptorSchema>;

/** The answer of `GET /v1/playbook/`. */
export const PlaybookListSchema = Type.Object({ items: Type.Array(PlaybookDescriptorSchema) });
