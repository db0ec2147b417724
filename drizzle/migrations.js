import journal from './meta/_journal.json';
import m0000 from './0000_init.sql';
import m0001 from './0001_eminent_hedge_knight.sql';
import m0002 from './0002_supreme_fallen_one.sql';
import m0003 from './0003_overconfident_terrax.sql';
import m0004 from './0004_sad_brother_voodoo.sql';
import m0005 from './0005_young_blonde_phantom.sql';
import m0006 from './0006_classy_roland_deschain.sql';
import m0007 from './0007_step-history-triggers.sql';
import m0008 from './0008_step-sensitive-output.sql';
import m0009 from './0009_index-run-metrics.sql';
import m0010 from './0010_tranquil_invaders.sql';
import m0011 from './0011_jazzy_ezekiel.sql';
import m0012 from './0012_step-record-tagged.sql';
import m0013 from './0013_steps-records-in-row.sql';
import m0014 from './0014_inline-children.sql';
import m0015 from './0015_partial-parent-index.sql';
import m0016 from './0016_steps-rowid-only.sql';
import m0017 from './0017_metrics-durations-in-minute.sql';
import m0018 from './0018_index-status-only.sql';
import m0019 from './0019_outbox-in-instance-row.sql';
import m0020 from './0020_index-entries-without-rowid.sql';
import m0021 from './0021_index-metrics-marks.sql';
import m0022 from './0022_index-entry-generation.sql';
import m0023 from './0023_index-created-only.sql';

  export default {
    journal,
    migrations: {
      m0000,
m0001,
m0002,
m0003,
m0004,
m0005,
m0006,
m0007,
m0008,
m0009,
m0010,
m0011,
m0012,
m0013,
m0014,
m0015,
m0016,
m0017,
m0018,
m0019,
m0020,
m0021,
m0022,
m0023
    }
  }
  