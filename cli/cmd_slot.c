#include "cli.h"
/* slot commands: filled in by the slot module work */
const struct cli_cmd cli_slot_cmds[] = {
	{ NULL },
};
