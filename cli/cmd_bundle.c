#include "cli.h"
/* bundle commands: filled in by the bundle module work */
const struct cli_cmd cli_bundle_cmds[] = {
	{ NULL },
};
