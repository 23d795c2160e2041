#include "cli.h"
/* layout commands: filled in by the layout module work */
const struct cli_cmd cli_layout_cmds[] = {
	{ NULL },
};
