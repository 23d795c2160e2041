#include "cli.h"
/* flash commands: filled in by the flash module work */
const struct cli_cmd cli_flash_cmds[] = {
	{ NULL },
};
