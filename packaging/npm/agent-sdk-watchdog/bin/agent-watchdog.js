#!/usr/bin/env node
'use strict';
require('../index.js').launch('agent-watchdog');
