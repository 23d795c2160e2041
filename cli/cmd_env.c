#include "cli.h"
/* env commands: filled in by the env module work */
const struct cli_cmd cli_env_cmds[] = {
	{ NULL },
};
